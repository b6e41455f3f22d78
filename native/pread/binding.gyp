{
  "targets": [
    {
      "target_name": "pread",
      "sources": ["pread.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
