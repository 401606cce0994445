{
  "targets": [
    {
      "target_name": "memtool",
      "sources": ["src/addon.c"],
      "cflags_c": ["-std=c17", "-Wall", "-Wextra", "-Wpedantic", "<!@(node scripts/find-memtool.js cflags)"],
      "libraries": ["<!@(node scripts/find-memtool.js libs)"]
    }
  ]
}
