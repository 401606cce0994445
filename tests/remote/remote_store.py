#!/usr/bin/env python3
"""The remote store (src/remote) against `memtool server` on loopback.

Requests per command (MEMTOOL_REMOTE_COUNT makes memtool print how many it
sent), 8 processes x 25 racing edits of one memory losing nothing, a
directory's rename and delete, the API's limits refused before any request,
URLs refused (http:// off loopback, a bad form), a missing store named, and
the history commands (log, show, diff, restore, undo, redact) through the
API's memory_versions, migrate both ways, and https:// with a certificate of
the server's own (MEMTOOL_CA_FILE).

usage: MEMTOOL=path/to/memtool remote_store.py
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
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

MEMTOOL = os.environ["MEMTOOL"]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what)


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    e.update(extra)
    return e


def call(url, key, tool, count=False):
    """(exit status, stdout, requests sent or None)."""
    r = subprocess.run([MEMTOOL, "--store", url, "call"], input=json.dumps(tool).encode(),
                       capture_output=True, timeout=60,
                       env=env(MEMTOOL_API_KEY=key, **({"MEMTOOL_REMOTE_COUNT": "1"} if count else {})))
    m = re.search(rb"memtool remote: (\d+) requests", r.stderr)
    return r.returncode, r.stdout.decode(), int(m.group(1)) if m else None


def new_store(base, key):
    req = urllib.request.Request(base + "/v1/memory_stores", method="POST", data=b'{"name":"t"}',
                                 headers={"Authorization": "Bearer " + key,
                                          "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return base + "/v1/memory_stores/" + json.load(r)["id"]


def counts(url, key):
    call(url, key, {"command": "create", "path": "/memories/n/a.md", "file_text": "one\ntwo\n"})
    rc, out, n = call(url, key, {"command": "view", "path": "/memories/n/a.md"}, True)
    check(rc == 0 and "two" in out and n == 1, "a view of a file: one request, not %r (%r)" % (n, out))
    rc, out, n = call(url, key, {"command": "str_replace", "path": "/memories/n/a.md",
                                 "old_str": "two", "new_str": "three"}, True)
    check(rc == 0 and n == 2, "an edit without a race: two requests, not %r (%r)" % (n, out))
    rc, out, n = call(url, key, {"command": "create", "path": "/memories/n/b.md", "file_text": "b"},
                      True)
    check(rc == 0 and n == 1, "a create: one request, not %r" % n)
    rc, out, n = call(url, key, {"command": "view", "path": "/memories/n"}, True)
    check(rc == 0 and "/memories/n/b.md" in out and n == 2,
          "a view of a directory: two requests, not %r (%r)" % (n, out))
    rc, out, n = call(url, key, {"command": "rename", "old_path": "/memories/n/b.md",
                                 "new_path": "/memories/n/c.md"}, True)
    check(rc == 0 and n == 2, "a rename of a memory: two requests, not %r (%r)" % (n, out))
    rc, out, n = call(url, key, {"command": "delete", "path": "/memories/n/c.md"}, True)
    check(rc == 0 and n == 2, "a delete of a memory: two requests, not %r (%r)" % (n, out))
    # The API's limits, in memtool's words, before any request.
    deep = "/memories/" + "/".join("d%d" % i for i in range(21))
    rc, out, n = call(url, key, {"command": "create", "path": deep, "file_text": "x"}, True)
    check(rc == 1 and "more than 20 segments" in out and "memory-store API" in out and n == 0,
          "21 segments: refused before any request: %r %r" % (n, out))
    rc, out, n = call(url, key, {"command": "create", "path": "/memories/big.md",
                                 "file_text": "x" * 102401}, True)
    check(rc == 1 and "102,400 bytes" in out and n == 0,
          "content over 100 kB: refused before any request: %r %r" % (n, out))
    rc, out, _ = call(url, key, {"command": "create", "path": "/memories/ok.md",
                                 "file_text": "x" * 102400})
    check(rc == 0, "content of exactly 102,400 bytes is taken: %r" % out)


def directories(url, key):
    for i in range(12):
        call(url, key, {"command": "create", "path": "/memories/d/s/f%02d.md" % i, "file_text": "%d\n" % i})
    rc, out, _ = call(url, key, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    check(rc == 0 and out == "Successfully renamed /memories/d to /memories/e", "rename of a directory: %r" % out)
    rc, out, _ = call(url, key, {"command": "view", "path": "/memories/e/s/f11.md"})
    check(rc == 0 and "11" in out, "a moved memory is at its new path: %r" % out)
    rc, out, _ = call(url, key, {"command": "view", "path": "/memories/d"})
    check(rc == 1 and "does not exist" in out, "nothing is left at the old path: %r" % out)
    rc, out, _ = call(url, key, {"command": "create", "path": "/memories/e/s/f00.md/x", "file_text": "x"})
    check(rc == 1 and "is a file" in out, "a file where a directory would be: %r" % out)
    rc, out, _ = call(url, key, {"command": "delete", "path": "/memories/e"})
    check(rc == 0, "delete of a directory: %r" % out)
    rc, out, _ = call(url, key, {"command": "view", "path": "/memories"})
    check(rc == 0 and "/memories/e" not in out,
          "nothing is left beneath a deleted directory: %r %r" % (rc, out))


def race(url, key):
    call(url, key, {"command": "create", "path": "/memories/race.md", "file_text": "start\n"})

    def worker(w):
        bad = []
        for i in range(25):
            tag = "w%d-%d" % (w, i)
            if i % 2:
                tool = {"command": "insert", "path": "/memories/race.md", "insert_line": 1,
                        "insert_text": tag + "\n"}
            else:
                tool = {"command": "str_replace", "path": "/memories/race.md", "old_str": "start\n",
                        "new_str": "start\n" + tag + "\n"}
            rc, out, _ = call(url, key, tool)
            if rc != 0:
                bad.append((tag, out))
        return bad

    with ThreadPoolExecutor(8) as pool:
        bad = sum(pool.map(worker, range(8)), [])
    check(not bad, "every racing edit succeeded: %r" % bad[:3])
    rc, out, _ = call(url, key, {"command": "view", "path": "/memories/race.md"})
    check(rc == 0, "the raced memory can be viewed: %r" % out[:200])
    # Each edit exactly once: none lost, none made twice.
    made = Counter(re.findall(r"\bw\d-\d+\b", out))
    want = {"w%d-%d" % (w, i) for w in range(8) for i in range(25)}
    check(set(made) == want and all(n == 1 for n in made.values()),
          "8 x 25 racing edits, each once: %d of 200 there, made twice: %r"
          % (len(set(made) & want), [t for t, n in made.items() if n > 1][:5]))


def cli(url, key, *args):
    r = subprocess.run([MEMTOOL, "--store", url, *args], capture_output=True, text=True, timeout=60,
                       env=env(MEMTOOL_API_KEY=key))
    return r.returncode, r.stdout, r.stderr


def history(url, key):
    """The history commands through memory_versions: memtool server's memver_N is version N."""
    call(url, key, {"command": "create", "path": "/memories/h.md", "file_text": "v1\n"})
    call(url, key, {"command": "str_replace", "path": "/memories/h.md", "old_str": "v1", "new_str": "v2"})
    rc, out, err = cli(url, key, "log", "/memories/h.md")
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 2 and lines[0].split()[0] == "2" and " modified " in lines[0]
          and lines[1].split()[0] == "1" and " created " in lines[1] and "api:apikey_" in lines[1],
          "log: the server's versions, newest first: %r %r" % (out, err))
    rc, out, _ = cli(url, key, "show", "1")
    check(rc == 0 and out == "v1\n", "show 1: the first content: %r" % out)
    rc, out, _ = cli(url, key, "diff", "--color=never", "2")
    check(rc == 0 and "-v1" in out and "+v2" in out, "diff 2: %r" % out)
    rc, out, _ = cli(url, key, "restore", "1")
    check(rc == 0 and "now version 3" in out, "restore 1: a new version 3: %r" % out)
    rc, out, _ = cli(url, key, "undo", "/memories/h.md")
    check(rc == 0 and "now version 4" in out, "undo: version 4: %r" % out)
    rc, out, _ = cli(url, key, "cat", "/memories/h.md")
    check(out == "v2\n", "after the undo, the content is v2: %r" % out)
    rc, out, err = cli(url, key, "redact", "1")
    check(rc == 0, "redact 1: %r %r" % (out, err))
    rc, out, err = cli(url, key, "show", "1")
    check(rc != 0 and "v1" not in out, "a redacted version has no content: %r %r" % (out, err))
    rc, out, err = cli(url, key, "redact", "4")
    check(rc != 0, "the current version cannot be redacted: %r %r" % (out, err))
    # A path's log: every version of the memories that were ever there, as on a local store.
    cli(url, key, "rename", "/memories/h.md", "/memories/g.md")
    rc, out, _ = cli(url, key, "log", "/memories/h.md")
    ids = [l.split()[0] for l in out.splitlines()]
    check(ids == ["5", "4", "3", "2", "1"] and "(redacted)" in out and "/memories/g.md" in out,
          "log of a former path: the memory's every version, the redacted one too: %r" % out)
    rc, out, _ = cli(url, key, "log", "--before", "3", "/memories/g.md")
    check([l.split()[0] for l in out.splitlines()] == ["2", "1"], "log --before 3: %r" % out)


def migrate(tmp, url, key):
    """migrate to a remote store and back: copied whole, checked, never replacing."""
    src, back = os.path.join(tmp, "src"), os.path.join(tmp, "back")
    for path, text in (("/memories/a.md", "alpha\n"), ("/memories/x/y/b.md", "beta\n" * 100)):
        subprocess.run([MEMTOOL, "--root", src, "create", path, "-"], input=text, text=True, check=True,
                       capture_output=True, env=env())
    subprocess.run([MEMTOOL, "--root", src, "str-replace", "/memories/a.md", "alpha", "alpha2"],
                   check=True, capture_output=True, env=env())
    r = subprocess.run([MEMTOOL, "--root", src, "migrate", "--to", url, "--json"], capture_output=True,
                       text=True, env=env(MEMTOOL_API_KEY=key))
    j = json.loads(r.stdout or "{}")
    check(r.returncode == 0 and j.get("copied") == 2 and j.get("failed") == 0,
          "migrate file: -> remote: %r %r" % (r.stdout, r.stderr))
    rc, out, _ = cli(url, key, "cat", "/memories/x/y/b.md")
    check(out == "beta\n" * 100, "the remote copy holds the same bytes")
    r = subprocess.run([MEMTOOL, "--root", src, "migrate", "--to", url, "--json"], capture_output=True,
                       text=True, env=env(MEMTOOL_API_KEY=key))
    j = json.loads(r.stdout or "{}")
    check(r.returncode == 0 and j.get("same") == 2 and j.get("copied") == 0,
          "migrate again: every memory already there: %r" % r.stdout)
    call(url, key, {"command": "str_replace", "path": "/memories/a.md", "old_str": "alpha2", "new_str": "theirs"})
    r = subprocess.run([MEMTOOL, "--root", src, "migrate", "--to", url, "--json"], capture_output=True,
                       text=True, env=env(MEMTOOL_API_KEY=key))
    j = json.loads(r.stdout or "{}")
    rc, out, _ = cli(url, key, "cat", "/memories/a.md")
    check(r.returncode == 1 and j.get("conflicts") == 1 and out == "theirs\n",
          "migrate never replaces other content: %r %r" % (r.stdout, out))
    r = subprocess.run([MEMTOOL, "--store", url, "migrate", "--to", "file:" + back, "--json"],
                       capture_output=True, text=True, env=env(MEMTOOL_API_KEY=key))
    j = json.loads(r.stdout or "{}")
    check(r.returncode == 0 and j.get("copied") == 2 and j.get("versions_copied", 0) >= 3,
          "migrate remote -> file:, with the versions: %r %r" % (r.stdout, r.stderr))
    got = subprocess.run([MEMTOOL, "--root", back, "cat", "/memories/a.md"], capture_output=True,
                         text=True, env=env()).stdout
    check(got == "theirs\n", "the local copy holds the remote content: %r" % got)


def nul(url, key):
    """Content with NUL bytes crosses the API as \\u0000, both ways; any other string of
    a body with one is refused (memtool server reads those up to the NUL)."""
    def post(target, body):
        req = urllib.request.Request(url + target, method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + key,
                                              "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)
    status, got = post("/memories?view=full", {"path": "/nul.bin", "content": "a\u0000b"})
    check(status == 200 and got.get("content") == "a\u0000b" and got.get("content_size_bytes") == 3,
          "content with a NUL is kept whole: %r %r" % (status, got))
    r = subprocess.run([MEMTOOL, "--store", url, "cat", "/memories/nul.bin"], capture_output=True,
                       env=env(MEMTOOL_API_KEY=key))
    check(r.returncode == 0 and r.stdout == b"a\x00b", "and read back through the store: %r" % r.stdout)
    status, got = post("/memories", {"path": "/x\u0000y.md", "content": "z"})
    check(status == 400 and "must not hold a NUL" in got["error"]["message"],
          "a path with a NUL is refused: %r %r" % (status, got))


def refusals(base, url, key):
    r = subprocess.run([MEMTOOL, "--store", "http://example.com/v1/memory_stores/memstore_x", "view",
                        "/memories"], capture_output=True, text=True, env=env(MEMTOOL_API_KEY=key))
    check(r.returncode != 0 and "http:// only on this machine" in r.stderr,
          "http:// off loopback is refused: %r" % r.stderr)
    r = subprocess.run([MEMTOOL, "--store", base + "/v1/stores/x", "view", "/memories"],
                       capture_output=True, text=True, env=env(MEMTOOL_API_KEY=key))
    check(r.returncode != 0 and "https://HOST[:PORT]/v1/memory_stores/memstore_ID" in r.stderr,
          "a bad URL names the form: %r" % r.stderr)
    r = subprocess.run([MEMTOOL, "--store", url, "view", "/memories"], capture_output=True, text=True,
                       env=env())
    check(r.returncode != 0 and "MEMTOOL_API_KEY" in r.stderr, "no key: said so: %r" % r.stderr)
    r = subprocess.run([MEMTOOL, "--store", url, "--encrypt", "view", "/memories"], capture_output=True,
                       text=True, env=env(MEMTOOL_API_KEY=key, MEMTOOL_PASSPHRASE="correct horse"))
    check(r.returncode == 2 and "encryption at rest is not available on a remote store" in r.stderr,
          "--encrypt on a remote store: said plainly: %r" % r.stderr)
    rc, out, _ = call(url + "0", key, {"command": "view", "path": "/memories"})
    check(rc == 1 and "memory store is not there" in out and key not in out,
          "a missing store is named, the key never shown: %r" % out)
    rc, out, _ = call(url, "mtk_wrong", {"command": "view", "path": "/memories"})
    check(rc == 1 and "401" in out and "mtk_wrong" not in out, "a bad key: 401, not echoed: %r" % out)
    # An http_proxy in the environment never carries the key of a store on this machine.
    r = subprocess.run([MEMTOOL, "--store", url, "view", "/memories"], capture_output=True, text=True,
                       env=env(MEMTOOL_API_KEY=key, http_proxy="http://127.0.0.1:9",
                               HTTP_PROXY="http://127.0.0.1:9", all_proxy="http://127.0.0.1:9"))
    check(r.returncode == 0, "a loopback store is reached past an http_proxy: %r" % r.stderr)
    # A key put in a URL by mistake is never echoed by the URL's error.
    for bad in ("https://k:mtk_in_url@example.com/v2/x", "mysql://u:mtk_in_url@h/d"):
        r = subprocess.run([MEMTOOL, "--store", bad, "view", "/memories"], capture_output=True,
                           text=True, env=env())
        check(r.returncode != 0 and "is not a" in r.stderr and "mtk_in_url" not in r.stderr,
              "a URL's credentials are not shown: %r" % r.stderr)


def https(tmp, keys, key):
    """https:// to a memtool server with a certificate of its own: trusted through
    MEMTOOL_CA_FILE; untrusted, refused at once with the reason (not tried again)."""
    cert, pkey = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "pkey.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", pkey, "-out",
                    cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   capture_output=True, check=True)
    srv = subprocess.Popen([MEMTOOL, "--store", "sqlite:" + os.path.join(tmp, "tls.db"), "server", "--listen",
                            "127.0.0.1:0", "--keys", keys, "--tls-cert", cert, "--tls-key", pkey],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env())
    try:
        base = srv.stdout.readline().strip()
        check(base.startswith("https://127.0.0.1:"), "the TLS server's URL: %r" % base)
        req = urllib.request.Request(base + "/v1/memory_stores", method="POST", data=b'{"name":"t"}',
                                     headers={"Authorization": "Bearer " + key,
                                              "content-type": "application/json"})
        import ssl
        with urllib.request.urlopen(req, timeout=30, context=ssl.create_default_context(cafile=cert)) as r:
            url = base + "/v1/memory_stores/" + json.load(r)["id"]
        tool = json.dumps({"command": "create", "path": "/memories/t.md", "file_text": "tls\n"}).encode()
        r = subprocess.run([MEMTOOL, "--store", url, "call"], input=tool, capture_output=True, timeout=60,
                           env=env(MEMTOOL_API_KEY=key, MEMTOOL_CA_FILE=cert))
        check(r.returncode == 0, "https with MEMTOOL_CA_FILE: %r" % r.stdout)
        t = time.time()
        r = subprocess.run([MEMTOOL, "--store", url, "call"], input=tool, capture_output=True, timeout=60,
                           env=env(MEMTOOL_API_KEY=key, MEMTOOL_REMOTE_COUNT="1"))
        out = r.stdout.decode()
        check(r.returncode == 1 and "certificate" in out.lower() and b"1 requests" in r.stderr
              and time.time() - t < 5, "an untrusted certificate: refused at once: %r" % out)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)


def search_cache(url, key):
    """Search reads what it needs and keeps it, checked by content_sha256: in one process, a
    first search of 45 memories lists them (a basic page of 100) and reads them in full pages of
    20 (4 requests); a second, nothing changed, only lists them (1); after another process
    changed one memory, it lists them and reads that one (2), and finds the change. Besides,
    each hit's lines are read (h requests): a cold search in a process of its own, once the
    change is made, costs 4 + h."""
    lines = "".join(json.dumps({"command": "create", "path": "/memories/s/n%02d.md" % i,
                                "file_text": "note %d apple\n" % i}) + "\n" for i in range(45))
    subprocess.run([MEMTOOL, "--store", url, "serve"], input=lines.encode(), capture_output=True,
                   timeout=60, env=env(MEMTOOL_API_KEY=key), check=True)

    def session():
        return subprocess.Popen([MEMTOOL, "--store", url, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env(MEMTOOL_API_KEY=key, MEMTOOL_REMOTE_COUNT="1"))

    def search(srv, query):
        srv.stdin.write((json.dumps({"command": "search", "path": "/memories", "query": query}) + "\n").encode())
        srv.stdin.flush()
        return json.loads(srv.stdout.readline())["content"]

    def requests(srv):
        _, err = srv.communicate(timeout=60)
        m = re.search(rb"memtool remote: (\d+) requests", err)
        return int(m.group(1)) if m else None

    a = session()
    first = search(a, "zebra")
    second = search(a, "zebra")
    rc, _, _ = call(url, key, {"command": "str_replace", "path": "/memories/s/n07.md", "old_str": "apple",
                               "new_str": "zebra"})
    third = search(a, "zebra")
    warm = requests(a)
    c = session()
    cold = search(c, "zebra")
    cold_requests = requests(c)
    check(rc == 0 and first == second and "/memories/s/n07.md" not in first and third == cold
          and "/memories/s/n07.md" in third,
          "a search sees the change another process made, as a fresh one does: %r %r" % (first[:80], third[:120]))
    check(warm is not None and cold_requests is not None and warm == 4 + 1 + 2 + (cold_requests - 4),
          "requests for a cold search, a warm one, and one after a change: 4 + 1 + 2 (+ the hit's lines), "
          "not %r (a cold search: %r)" % (warm, cold_requests))


def front_ends(url, key):
    """Every front end on a remote store: serve (JSON lines), mcp, the Python binding and the
    agent (memtool run, against the stand-in Messages API of tests/agent), each reading what
    another wrote."""
    r = subprocess.run([MEMTOOL, "--store", url, "serve"], input=(
        json.dumps({"command": "create", "path": "/memories/fe/serve.md", "file_text": "by serve\n"}) + "\n" +
        json.dumps({"command": "view", "path": "/memories/fe/serve.md"}) + "\n").encode(),
        capture_output=True, timeout=60, env=env(MEMTOOL_API_KEY=key))
    lines = [json.loads(l) for l in r.stdout.decode().splitlines()]
    check(r.returncode == 0 and len(lines) == 2 and not lines[0]["is_error"]
          and lines[1]["content"].endswith("     1\tby serve"), "serve on a remote store: %r" % lines)
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory", "arguments": {
                "command": "str_replace", "path": "/memories/fe/serve.md", "old_str": "by serve",
                "new_str": "by serve, then mcp"}}}]
    r = subprocess.run([MEMTOOL, "--store", url, "mcp"], input="".join(json.dumps(m) + "\n" for m in msgs).encode(),
                       capture_output=True, timeout=60, env=env(MEMTOOL_API_KEY=key))
    out = [json.loads(l) for l in r.stdout.decode().splitlines() if l.strip()]
    got = [o for o in out if o.get("id") == 2]
    check(r.returncode == 0 and got and got[0]["result"]["isError"] is False,
          "mcp on a remote store: %r %r" % (out[-1:], r.stderr[-300:]))
    # The Python binding, in a process of its own (it loads libmemtool).
    # A sanitizer build's libmemtool cannot load into a plain python: there
    # CMake says so (MEMTOOL_PYTHON_BINDING=off) and the plain build checks it.
    lib = os.environ.get("MEMTOOL_LIBRARY")
    python_off = os.environ.get("MEMTOOL_PYTHON_BINDING") == "off"
    check(bool(lib) or python_off, "MEMTOOL_LIBRARY names libmemtool (ctest sets it)")
    if lib and not python_off:
        prog = ("import memtool, sys\n"
                "m = memtool.Memory(store=sys.argv[1])\n"
                "r = m.call({'command': 'view', 'path': '/memories/fe/serve.md'})\n"
                "print(r.text if not r.is_error else 'ERROR ' + r.text)\n"
                "print(len(m.log('/memories/fe/serve.md')))\n")
        r = subprocess.run([sys.executable, "-c", prog, url], capture_output=True, timeout=60, text=True,
                           env=env(MEMTOOL_API_KEY=key, MEMTOOL_LIBRARY=lib, PYTHONPATH=os.path.join(
                               SRC, "bindings", "python", "src")))
        check(r.returncode == 0 and "     1\tby serve, then mcp\n2\n" in r.stdout,
              "the Python binding on a remote store: %r %r" % (r.stdout, r.stderr[-300:]))
    # The agent: the model creates a memory; the stand-in checks the tool result it gets back.
    sys.path.insert(0, os.path.join(SRC, "tests", "agent"))
    import fake_api

    def msg(n, content, stop):
        return {"message": {"model": "claude-sonnet-4-5", "id": "msg_%d" % n, "type": "message",
                            "role": "assistant", "content": content, "stop_reason": stop,
                            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}}
    exchanges = [
        {"respond": msg(1, [{"type": "tool_use", "id": "toolu_1", "name": "memory", "input": {
            "command": "create", "path": "/memories/fe/agent.md", "file_text": "by the agent\n"}}], "tool_use")},
        {"expect": {"tool_results": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "File created successfully at: /memories/fe/agent.md",
                                      "is_error": False}]},
         "respond": msg(2, [{"type": "text", "text": "Saved."}], "end_turn")}]
    api = fake_api.FakeAPI(exchanges, versions=("2026-10-21",), bearer=True, threads="off").start()
    try:
        e = {k: v for k, v in env(MEMTOOL_API_KEY=key).items()
             if not k.lower().endswith("_proxy") and not k.startswith("ANTHROPIC_")}
        e.update(ANTHROPIC_BASE_URL=api.url(), ANTHROPIC_API_KEY=fake_api.API_KEY, NO_PROXY="*")
        r = subprocess.run([MEMTOOL, "--store", url, "run", "--no-thread", "--no-search", "--no-stream",
                            "Remember this."], capture_output=True, timeout=60, env=e, text=True)
        check(r.returncode == 0 and "Saved." in r.stdout and not api.failures,
              "memtool run on a remote store: %d %r %r %r" % (r.returncode, r.stdout[-200:], r.stderr[-300:],
                                                           api.failures))
    finally:
        api.stop()
    rc, out, _ = call(url, key, {"command": "view", "path": "/memories/fe/agent.md"})
    check(rc == 0 and out.endswith("     1\tby the agent"), "the agent's memory is in the remote store: %r" % out)


def main():
    tmp = tempfile.mkdtemp(prefix="memtool-remote-")
    keys = os.path.join(tmp, "keys")
    key = subprocess.run([MEMTOOL, "server", "keys", "add", "t", "--keys", keys], capture_output=True,
                         text=True, check=True, env=env()).stdout.strip()
    srv = subprocess.Popen([MEMTOOL, "--store", "sqlite:" + os.path.join(tmp, "s.db"), "server",
                            "--listen", "127.0.0.1:0", "--keys", keys],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env())
    base = srv.stdout.readline().strip()
    try:
        counts(new_store(base, key), key)
        directories(new_store(base, key), key)
        race(new_store(base, key), key)
        nul(new_store(base, key), key)
        history(new_store(base, key), key)
        migrate(tmp, new_store(base, key), key)
        https(tmp, keys, key)
        url = new_store(base, key)
        refusals(base, url, key)
        front_ends(new_store(base, key), key)
        search_cache(new_store(base, key), key)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
