#!/usr/bin/env python3
"""The cost of a view and an edit on a remote store over loopback, against the
same through `memtool serve` on a local store.

Starts `memtool server` (SQLite, loopback) and makes a memory store; then one
`memtool serve` on that store (--store http://127.0.0.1:PORT/v1/memory_stores/
memstore_…) and one on a SQLite store of its own, and sends each the same
requests one at a time (the next when the answer came): N views of a small
memory, then N str_replace edits of it. Prints a Markdown table of the
medians and 99th percentiles, and the requests the remote store sent per
command (MEMTOOL_REMOTE_COUNT, from a `memtool call` of each).

usage: bench/remote.py MEMTOOL [N]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    e.update(extra)
    return e


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def run(memtool, store, key, n):
    srv = subprocess.Popen([memtool, "--store", store, "serve"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, env=env(MEMTOOL_API_KEY=key))

    def ask(tool):
        srv.stdin.write((json.dumps(tool) + "\n").encode())
        srv.stdin.flush()
        line = srv.stdout.readline()
        assert not json.loads(line)["is_error"], line
    ask({"command": "create", "path": "/memories/notes/a.md", "file_text": "counter 0\nsome text\n"})
    views, edits = [], []
    for _ in range(n):
        t = time.perf_counter()
        ask({"command": "view", "path": "/memories/notes/a.md"})
        views.append(time.perf_counter() - t)
    for i in range(n):
        t = time.perf_counter()
        ask({"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "counter %d" % i,
             "new_str": "counter %d" % (i + 1)})
        edits.append(time.perf_counter() - t)
    srv.stdin.close()
    srv.wait(timeout=30)
    return views, edits


def count(memtool, url, key, tool):
    r = subprocess.run([memtool, "--store", url, "call"], input=json.dumps(tool).encode(),
                       capture_output=True, env=env(MEMTOOL_API_KEY=key, MEMTOOL_REMOTE_COUNT="1"))
    return int(re.search(rb"memtool remote: (\d+) requests", r.stderr).group(1))


def main():
    memtool = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    tmp = tempfile.mkdtemp(prefix="memtool-bench-remote-")
    keys = os.path.join(tmp, "keys")
    key = subprocess.run([memtool, "server", "keys", "add", "bench", "--keys", keys], capture_output=True,
                         text=True, check=True, env=env()).stdout.strip()
    srv = subprocess.Popen([memtool, "--store", "sqlite:" + os.path.join(tmp, "server.db"), "server",
                            "--listen", "127.0.0.1:0", "--keys", keys],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env())
    base = srv.stdout.readline().strip()
    try:
        req = urllib.request.Request(base + "/v1/memory_stores", method="POST", data=b'{"name":"bench"}',
                                     headers={"Authorization": "Bearer " + key,
                                              "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            url = base + "/v1/memory_stores/" + json.load(r)["id"]
        rows = []
        for name, store in (("remote (memtool server on loopback)", url),
                            ("local (sqlite:, the same machine)", "sqlite:" + os.path.join(tmp, "local.db"))):
            views, edits = run(memtool, store, key, n)
            rows.append((name, views, edits))
        print("| store | view median | view p99 | edit median | edit p99 |")
        print("|---|---|---|---|---|")
        for name, views, edits in rows:
            print("| %s | %.0f µs | %.0f µs | %.0f µs | %.0f µs |" % (
                name, pct(views, 0.5) * 1e6, pct(views, 0.99) * 1e6, pct(edits, 0.5) * 1e6,
                pct(edits, 0.99) * 1e6))
        print()
        print("requests per command on the remote store (one `memtool call` each):")
        for what, tool in (
                ("view of a memory", {"command": "view", "path": "/memories/notes/a.md"}),
                ("str_replace", {"command": "str_replace", "path": "/memories/notes/a.md",
                                 "old_str": "some text", "new_str": "more text"}),
                ("create", {"command": "create", "path": "/memories/notes/b.md", "file_text": "b\n"}),
                ("view of a directory", {"command": "view", "path": "/memories/notes"}),
                ("rename of a memory", {"command": "rename", "old_path": "/memories/notes/b.md",
                                        "new_path": "/memories/notes/c.md"}),
                ("delete of a memory", {"command": "delete", "path": "/memories/notes/c.md"})):
            print("- %s: %d" % (what, count(memtool, url, key, tool)))
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
