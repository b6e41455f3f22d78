{
  "targets": [
    {
      "target_name": "sockopt",
      "sources": ["sockopt.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
