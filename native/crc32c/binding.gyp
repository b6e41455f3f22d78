{
  "targets": [
    {
      "target_name": "crc32c",
      "sources": ["crc32c.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
