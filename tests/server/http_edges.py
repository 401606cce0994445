#!/usr/bin/env python3
"""memtool server against what the SDK never sends, through curl: broken
and hostile requests, keys missing, revoked or of another tenant, a slow
client. Every answer is the API's error shape; none is a 500."""
import json
import shutil
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata

MEMTOOL = os.environ["MEMTOOL"]
failures = []
answers = []  # (method, url, status, body) of every request curl made


checked = [0]


def check(cond, what):
    checked[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def memtool(*args):
    return subprocess.run([MEMTOOL, *args], capture_output=True, text=True, check=True).stdout


def curl(url, key=None, method="GET", body=None, headers=(), raw_path=False):
    """(status, headers dict, body text) of one request."""
    cmd = ["curl", "-s", "-S", "-m", "20", "-D", "-", "-X", method, url]
    if raw_path:
        cmd.insert(1, "--path-as-is")
    if key:
        cmd += ["-H", "Authorization: Bearer " + key]
    for h in headers:
        cmd += ["-H", h]
    inp = None
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        inp = body if isinstance(body, bytes) else body.encode()
    r = subprocess.run(cmd, input=inp, capture_output=True)
    if r.returncode != 0:
        # No answer at all (reset, closed, timed out): status 0, which every check refuses.
        answers.append((method, url, 0, r.stderr.decode("utf-8", "replace")))
        return 0, {}, ""
    out = r.stdout.decode("utf-8", "replace")
    head, _, text = out.partition("\r\n\r\n")
    while head.startswith("HTTP/1.1 100"):
        head, _, text = text.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    answers.append((method, url, status, text))
    return status, hdrs, text


def error_type(text):
    try:
        j = json.loads(text)
        return j["type"] == "error" and j["error"]["type"], j
    except (ValueError, KeyError, TypeError):
        return None, None


def main():
    tmp = tempfile.mkdtemp(prefix="memtool-http-")
    keys = os.path.join(tmp, "keys")
    ka = memtool("server", "keys", "add", "alice", "--keys", keys).strip()
    kb = memtool("server", "keys", "add", "bob", "--keys", keys).strip()
    kadmin = memtool("server", "keys", "add", "ops", "--admin", "--keys", keys).strip()
    kgone = memtool("server", "keys", "add", "alice", "--keys", keys).strip()
    log = open(os.path.join(tmp, "log"), "w+")
    srv = subprocess.Popen(
        [MEMTOOL, "--root", os.path.join(tmp, "store"), "server", "--listen", "127.0.0.1:0",
         "--keys", keys], stdout=subprocess.PIPE, stderr=log, text=True)
    base = srv.stdout.readline().strip()
    check(base.startswith("http://127.0.0.1:"), "the server prints its URL: %r" % base)
    try:
        run(base, ka, kb, kadmin, kgone, keys)
        more(base, ka, kb, keys, tmp)
        hostile(base, ka)
        slow_clients(base, ka)
        migrate_into_memory_store(base, ka, tmp)
    finally:
        srv.send_signal(signal.SIGTERM)
        code = srv.wait(timeout=20)
        check(code == 0, "SIGTERM: exit 0, not %r" % code)
    log.seek(0)
    # The access log's lines; what the HTTP library says besides (a client gone
    # mid-request) is logged as {"http_library": ...}, no answer of its own.
    lines = [l for l in log.read().splitlines() if l.startswith("{") and "http_library" not in json.loads(l)]
    check(len(lines) > 20, "an access log line per request")
    # Whatever was sent, never a 5xx; every error in the API's shape, with its request id.
    for method, url, st, body in answers:
        url = url if len(url) < 160 else url[:150] + "...(%d chars)" % len(url)
        check(0 < st < 500, "%s %s: %d, never a 5xx nor no answer: %s" % (method, url, st, body[:200] if st == 0 else ""))
        if st in (414, 431) and body.startswith("<html>"):
            continue  # refused by libmicrohttpd itself, with its own body (docs/server.md): checked below
        if st >= 400:
            et, j = error_type(body)
            check(bool(et) and str(j.get("request_id", "")).startswith("req_"),
                  "%s %s: %d in the error shape: %r" % (method, url, st, body[:200]))
    for l in lines:
        check(json.loads(l).get("status", 0) < 500, "the access log holds no 5xx: " + l)
    # One access log line for each answer: every request curl got an answer to, the refused ones too.
    logged = {}
    for l in lines:
        j = json.loads(l)
        if j.get("aborted") and j["status"] == 0:
            continue  # a stalled client's request, never answered: logged as aborted, rightly
        logged[j["status"]] = logged.get(j["status"], 0) + 1
    sent = {}
    for _, _, st, _ in answers:
        if st:
            sent[st] = sent.get(st, 0) + 1
    check(logged == sent, "an access log line for each answer, by status: logged %s, answered %s" % (
        sorted(logged.items()), sorted(sent.items())))
    for l in lines:
        j = json.loads(l)
        check({"request_id", "method", "path", "status", "ms"} <= set(j), "log fields: " + l)
    # What libmicrohttpd refuses before the server sees it is logged too, named as such.
    refused = sorted(json.loads(l)["status"] for l in lines if json.loads(l).get("refused_by") == "libmicrohttpd")
    check(refused == [414, 431], "the 100 kB URL and header are logged as refused by the library: %s" % refused)
    text = "\n".join(lines)
    for secret in (ka, kb, kadmin, kgone, "EDGE-CONTENT-MARKER"):
        check(secret not in text, "the log never holds a key or content")
    listen_checks(tmp, keys, ka)
    encrypted_store(tmp, keys, ka)
    shutdown_in_flight(tmp, keys, ka)
    start_stop(tmp, keys)
    if not os.environ.get("MEMTOOL_TEST_KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("http_edges: all %d checks passed (%d requests)" % (checked[0], len(answers)))


def run(base, ka, kb, kadmin, kgone, keys):
    v1 = base + "/v1/memory_stores"
    st, _, _ = curl(base + "/healthz")
    check(st == 200, "healthz 200")

    # Keys.
    st, _, t = curl(v1)
    check(st == 401 and error_type(t)[0] == "authentication_error", "no key: 401 %s" % t)
    st, _, t = curl(v1, key="mtk_" + "A" * 43)
    check(st == 401 and error_type(t)[0] == "authentication_error", "bad key: 401")
    st, _, t = curl(v1, headers=["x-api-key: " + ka])
    check(st == 200, "x-api-key works: %d" % st)
    st, _, _ = curl(v1, key=kgone)
    check(st == 200, "a key works before its revocation")
    kid = [k["id"] for k in json.loads(memtool("server", "keys", "list", "--json", "--keys", keys))
           if k["tenant"] == "alice"][-1]
    memtool("server", "keys", "revoke", kid, "--keys", keys)
    time.sleep(1.0)
    st, _, _ = curl(v1, key=kgone)
    check(st == 401, "a revoked key is refused within a second: %d" % st)

    st, _, t = curl(v1, key=ka, method="POST", body='{"name":"edges"}')
    check(st == 200, "store created: %s" % t)
    sid = json.loads(t)["id"]
    mem = v1 + "/" + sid + "/memories"

    # Bodies.
    st, _, t = curl(v1, key=ka, method="POST", body="{not json")
    check(st == 400 and error_type(t)[0] == "invalid_request_error", "bad JSON: 400")
    st, _, t = curl(mem, key=ka, method="POST", body="[1,2]")
    check(st == 400, "a body that is not an object: 400")
    st, _, t = curl(mem, key=ka, method="POST", body=b'{"path":"/a.md","content":"' + b"x" * (2 << 20) + b'"}')
    check(st == 413, "a 2 MiB body: 413, not %d" % st)
    big = "y" * 102401
    st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": "/big.md", "content": big}))
    check(st == 400 and error_type(t)[0] == "invalid_request_error", "content of 102,401 bytes: 400")
    st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": "/max.md", "content": big[:-1]}))
    check(st == 200, "content of 102,400 bytes: 200 (%d)" % st)
    st, _, t = curl(mem, key=ka, method="POST", body=json.dumps(
        {"path": "/s.md", "content": "EDGE-CONTENT-MARKER key AKIAIOSFODNN7EXAMPLQ\n"}))
    check(st == 400 and "AKIAIOSFODNN7EXAMPLQ" not in t, "a secret is refused, never echoed: %s" % t)

    # Paths.
    bad_paths = {
        "not NFC": unicodedata.normalize("NFD", "/café.md"),
        "trailing slash": "/notes/",
        "no leading slash": "notes.md",
        "dot-dot": "/a/../b.md",
        "dot": "/a/./b.md",
        "empty segment": "/a//b.md",
        "21 segments": "/" + "/".join(["d"] * 21),
        "control char": "/a\u0007b.md",
        "format char": "/a\u200db.md",
        "line separator": "/a\u2028b.md",
        "over 1,024 bytes": "/" + "/".join(["n" * 100] * 11),
        "reserved name": "/.memtool/x",
    }
    for what, p in bad_paths.items():
        st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": p, "content": "x"}))
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "path %s: 400, not %d %s" % (what, st, t[:200]))
    st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": "/" + "/".join(["d"] * 19) + "/f.md", "content": "x"}))
    check(st == 200, "20 segments: 200 (%d %s)" % (st, t[:200]))
    st, _, t = curl(mem + "?path_prefix=/notes", key=ka)
    check(st == 400, "path_prefix without a trailing slash: 400")

    # Methods, routes, traversal.
    st, _, t = curl(mem, key=ka, method="PUT", body="{}")
    check(st == 405 and error_type(t)[0], "wrong method: 405 (%d)" % st)
    st, _, t = curl(v1 + "/" + sid, key=ka, method="PATCH", body="{}")
    check(st == 405, "PATCH on a store: 405")
    for url in (base + "/v1/memory_stores/../../etc/passwd", base + "/v1/memory_stores/%2e%2e/%2e%2e/etc",
                mem + "/../../etc/passwd", mem + "/..%2f..%2fetc", base + "/etc/passwd", base + "/"):
        st, _, t = curl(url, key=ka, raw_path=True)
        check(st in (400, 404) and error_type(t)[0], "traversal %s: 404, not %d" % (url, st))
        check("root:" not in t, "traversal reaches no file")

    # Another tenant: 404, never 403.
    st, _, t = curl(mem, key=kb)
    check(st == 404 and error_type(t)[0] == "not_found_error", "another tenant's store: 404 (%d)" % st)
    st, _, t = curl(mem, key=kb, method="POST", body='{"path":"/x.md","content":"x"}')
    check(st == 404, "another tenant's store, a write: 404 (%d)" % st)

    # 409s say not to retry.
    st, _, t = curl(mem, key=ka, method="POST", body='{"path":"/c.md","content":"1"}')
    mid = json.loads(t)["id"]
    st, h, t = curl(mem + "/" + mid, key=ka, method="POST",
                    body='{"content":"2","precondition":{"type":"content_sha256","content_sha256":"' + "0" * 64 + '"}}')
    check(st == 409 and h.get("x-should-retry") == "false", "409 with x-should-retry: false")
    check(h.get("request-id", "").startswith("req_") and error_type(t)[1]["request_id"] == h["request-id"],
          "request-id header and body agree")

    # Metrics: admin only.
    st, _, t = curl(base + "/metrics", key=ka)
    check(st == 403, "metrics need an admin key: 403 (%d)" % st)
    st, _, t = curl(base + "/metrics", key=kadmin)
    check(st == 200 and 'memtool_http_requests_total{code="409"}' in t, "metrics for an admin")

    # A slow client (half a header, then silence) does not hold up the others.
    slow = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
    slow.sendall(b"GET /v1/memory_stores HTTP/1.1\r\nHost: x\r\nAuthorization: Bear")
    t0 = time.monotonic()
    st, _, _ = curl(v1, key=ka)
    check(st == 200 and time.monotonic() - t0 < 2, "another client is served beside a slow one")
    slow.close()


def more(base, ka, kb, keys, tmp):
    """Routes, headers, sizes in bytes, renames and ids that try to climb out."""
    v1 = base + "/v1/memory_stores"
    # Unknown routes 404; the beta header absent, another beta, or an old client's ?beta=true: all fine.
    for url in (base + "/v1/nope", base + "/v2/memory_stores", v1 + "/memstore_0123456789abcdef/nope"):
        st, _, t = curl(url, key=ka)
        check(st == 404 and error_type(t)[0] == "not_found_error", "unknown route %s: 404 (%d)" % (url, st))
    st, _, t = curl(v1, key=ka, method="POST", body='{"name":"more"}')
    sid = json.loads(t)["id"]
    mem = v1 + "/" + sid + "/memories"
    st, _, t = curl(mem, key=ka, method="POST", body='{"path":"/nobeta.md","content":"x"}')
    check(st == 200, "no anthropic-beta header: a write is 200 (%d %s)" % (st, t[:200]))
    for beta in ("managed-agents-2026-04-01", "files-api-2025-04-14,agent-memory-2026-07-22"):
        st, _, _ = curl(mem, key=ka, headers=["anthropic-beta: " + beta, "anthropic-version: 2026-10-21"])
        check(st == 200, "anthropic-beta %s: 200 (%d)" % (beta, st))
    st, _, _ = curl(v1 + "?beta=true", key=ka)
    check(st == 200, "?beta=true (older SDKs): 200 (%d)" % st)

    # Keys sent other ways.
    st, _, t = curl(v1, headers=["x-api-key: mtk_" + "B" * 43])
    check(st == 401 and error_type(t)[0] == "authentication_error", "bad x-api-key: 401 (%d)" % st)
    st, _, _ = curl(v1, headers=["Authorization: Basic " + ka])
    check(st == 401, "a key as Basic auth is not a bearer key: 401 (%d)" % st)
    st, _, _ = curl(v1, headers=["Authorization: Bearer "])
    check(st == 401, "an empty bearer: 401 (%d)" % st)

    # Content is counted in UTF-8 bytes: 51,200 é are 102,400 bytes (200); one more byte is 400.
    st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": "/utf8.md", "content": "\u00e9" * 51200}))
    check(st == 200 and json.loads(t).get("content_size_bytes") == 102400, "102,400 bytes of é: 200 (%d %s)" % (st, t[:200]))
    st, _, t = curl(mem, key=ka, method="POST",
                    body=json.dumps({"path": "/utf8b.md", "content": "\u00e9" * 51200 + "x"}, ensure_ascii=False))
    check(st == 400 and error_type(t)[0] == "invalid_request_error", "102,401 bytes of UTF-8: 400 (%d)" % st)
    # The same on update; and a body that is a string, null content, a missing path.
    st, _, t = curl(mem, key=ka, method="POST", body='{"path":"/u.md","content":"u"}')
    uid = json.loads(t)["id"]
    st, _, t = curl(mem + "/" + uid, key=ka, method="POST", body=json.dumps({"content": "z" * 102401}))
    check(st == 400 and error_type(t)[0] == "invalid_request_error", "update to 102,401 bytes: 400 (%d)" % st)
    st, _, t = curl(mem + "/" + uid, key=ka, method="POST", body="{not json")
    check(st == 400 and error_type(t)[0] == "invalid_request_error", "bad JSON on update: 400 (%d)" % st)
    st, _, t = curl(mem, key=ka, method="POST", body='{"content":"no path"}')
    check(st == 400, "create without a path: 400 (%d)" % st)
    st, _, t = curl(mem, key=ka, method="POST", body='"just a string"')
    check(st == 400, "a JSON string as the body: 400 (%d)" % st)
    st, _, t = curl(mem + "/" + uid, key=ka, method="POST",
                    body='{"content":"v","precondition":{"type":"content_sha256","content_sha256":"XYZ"}}')
    check(st == 400, "a precondition that is not 64 hex digits: 400 (%d %s)" % (st, t[:200]))

    # Renames are held to the same path rules as creates; a refused one changes nothing.
    for what, p in (("not NFC", unicodedata.normalize("NFD", "/é.md")), ("trailing slash", "/u/"),
                    ("dot-dot", "/../u.md"), ("dot-dot deeper", "/a/../../u.md"), ("empty", ""), ("root", "/")):
        st, _, t = curl(mem + "/" + uid, key=ka, method="POST", body=json.dumps({"path": p}))
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "rename to %s: 400 (%d %s)" % (what, st, t[:200]))
    st, _, t = curl(mem + "/" + uid, key=ka)
    check(st == 200 and json.loads(t)["path"] == "/u.md" and json.loads(t)["content"] == "u", "refused renames changed nothing")
    # A rename that would change only case or normalisation is a real rename: paths are case-sensitive.
    st, _, t = curl(mem + "/" + uid, key=ka, method="POST", body='{"path":"/U.md"}')
    check(st == 200 and json.loads(t)["path"] == "/U.md", "a rename to /U.md: 200 (%d %s)" % (st, t[:200]))

    # Query values: a prefix that climbs, numbers that are not, a view that does not exist.
    for q in ("path_prefix=/../", "path_prefix=/a/../", "path_prefix=%2F..%2F", "depth=abc", "depth=-1",
              "limit=abc", "limit=0", "view=everything"):
        st, _, t = curl(mem + "?" + q, key=ka)
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "?%s: 400 (%d %s)" % (q, st, t[:200]))
    st, _, t = curl(mem + "?page=!!not-a-cursor!!", key=ka)
    check(st == 400, "a page cursor the server never gave: 400 (%d %s)" % (st, t[:120]))

    # Ids that try to climb out, percent-encoded as the SDK would send them, and raw: 404 (or 400),
    # never a file's content. A file outside the store holds a marker to look for.
    with open(os.path.join(tmp, "outside.txt"), "w") as f:
        f.write("OUTSIDE-THE-STORE\n")
    vers = v1 + "/" + sid + "/memory_versions"
    urls = [v1 + "/..%2F..%2Foutside.txt", v1 + "/%2e%2e", v1 + "/%2e%2e%2f%2e%2e%2foutside.txt",
            mem + "/..%2F..%2F..%2F..%2Foutside.txt", mem + "/%2e%2e%2f%2e%2e", mem + "/mem_..%2F..",
            mem + "/mem_0123456789abcdef%00", vers + "/..%2F..%2Foutside.txt", vers + "/memver_..%2F1",
            mem + "/../../../../outside.txt", v1 + "/" + sid + "/../../../outside.txt",
            base + "/v1/memory_stores/" + sid + "/memories/%2E%2E/%2E%2E/%2E%2E/outside.txt",
            mem + "?path_prefix=/..%2F..%2F"]
    for url in urls:
        for method in ("GET", "DELETE"):
            st, _, t = curl(url, key=ka, method=method, raw_path=True)
            check(st in (400, 404, 405) and error_type(t)[0], "%s %s: 400/404 (%d)" % (method, url, st))
            check("OUTSIDE-THE-STORE" not in t, "%s %s reaches no file outside the store" % (method, url))
    check(open(os.path.join(tmp, "outside.txt")).read() == "OUTSIDE-THE-STORE\n", "the file outside is untouched")
    for p in ("/../escape.md", "/../../escape.md", "/a/../../escape.md"):
        st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": p, "content": "ESCAPE"}))
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "create %r: 400 (%d %s)" % (p, st, t[:200]))
    # Names that only look like climbing are names: kept inside the store, whatever the answer.
    for p in ("/%2e%2e/escape.md", "/..\\escape.md", "/...", "/.. /escape.md"):
        st, _, t = curl(mem, key=ka, method="POST", body=json.dumps({"path": p, "content": "ESCAPE"}))
        check(st in (200, 400), "create %r: 200 or 400 (%d %s)" % (p, st, t[:200]))
        if st == 200:
            st, _, t2 = curl(mem + "/" + json.loads(t)["id"], key=ka)
            check(st == 200 and json.loads(t2)["path"] == p, "%r is kept as itself (%s)" % (p, t2[:200]))
    for dirpath, _, files in os.walk(tmp):
        if os.path.join(tmp, "store") not in dirpath:
            check("escape.md" not in files, "no escape.md outside the store: %s" % dirpath)

    # Another tenant's ids: 404 for every kind of request, never 403; a store id of a tenant never made: 404.
    st, _, t = curl(mem + "/" + uid, key=kb)
    check(st == 404 and error_type(t)[0] == "not_found_error", "bob reads alice's memory: 404 (%d)" % st)
    st, _, t = curl(mem + "/" + uid, key=kb, method="DELETE")
    check(st == 404, "bob deletes alice's memory: 404 (%d)" % st)
    st, _, t = curl(v1 + "/" + sid + "/archive", key=kb, method="POST")
    check(st == 404, "bob archives alice's store: 404 (%d)" % st)
    st, _, t = curl(vers, key=kb)
    check(st == 404, "bob lists alice's versions: 404 (%d)" % st)
    st, _, t = curl(v1 + "/memstore_0123456789abcdef", key=ka)
    check(st == 404 and error_type(t)[0] == "not_found_error", "a store id never made: 404 (%d)" % st)

    # A revoked key, sent as x-api-key, is refused too; polled, it must be refused within 1.5 s.
    k2 = memtool("server", "keys", "add", "alice", "--keys", keys).strip()
    t0 = time.monotonic()
    while curl(v1, headers=["x-api-key: " + k2])[0] != 200 and time.monotonic() - t0 < 1.5:
        time.sleep(0.1)
    check(curl(v1, headers=["x-api-key: " + k2])[0] == 200, "an added key works on a running server within 1.5 s")
    kid = [k["id"] for k in json.loads(memtool("server", "keys", "list", "--json", "--keys", keys))
           if k["tenant"] == "alice"][-1]
    memtool("server", "keys", "revoke", kid, "--keys", keys)
    t0 = time.monotonic()
    while curl(v1, headers=["x-api-key: " + k2])[0] != 401 and time.monotonic() - t0 < 1.5:
        time.sleep(0.1)
    st, _, t = curl(v1, headers=["x-api-key: " + k2])
    check(st == 401 and error_type(t)[0] == "authentication_error",
          "a revoked x-api-key is refused within 1.5 s (%d after %.1f s)" % (st, time.monotonic() - t0))


def hostile(base, ka):
    """Bodies, headers and URLs made to break parsers: each a 4xx in the error shape (never
    a 5xx, never a dropped connection), and the server answers normally after each."""
    v1 = base + "/v1/memory_stores"
    st, _, t = curl(v1, key=ka, method="POST", body='{"name":"hostile"}')
    sid = json.loads(t)["id"]
    mem = v1 + "/" + sid + "/memories"
    st, _, t = curl(mem, key=ka, method="POST", body='{"path":"/h.md","content":"h"}')
    mid = json.loads(t)["id"]
    bodies = {
        "nested arrays 500k deep": b"[" * 500000,
        "nested objects 100k deep": b'{"a":' * 100000,
        "raw 0xff in a string": b'{"path":"/ff.md","content":"\xff\xfe"}',
        "a lone surrogate": b'{"path":"/s.md","content":"\\ud800"}',
        "a NUL in the path": b'{"path":"/a\\u0000b.md","content":"x"}',
        "content a number": b'{"path":"/n.md","content":12}',
        "path an object": b'{"path":{"a":1},"content":"x"}',
        "trailing garbage": b'{"path":"/g.md","content":"x"} trailing',
        "two documents": b'{"path":"/g.md","content":"x"}{"path":"/g2.md","content":"x"}',
        "a huge number": b'{"path":"/g.md","content":"x","extra":1' + b"0" * 5000 + b"}",
        "empty": b"",
        "utf-8 BOM": b'\xef\xbb\xbf{"path":"/bom.md","content":"x"}',
    }
    for what, body in bodies.items():
        st, _, t = curl(mem, key=ka, method="POST", body=body)
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "create with %s: 400 (%d %s)" % (what, st, t[:160]))
    upd = {
        "a precondition of another type": '{"content":"v","precondition":{"type":"etag","etag":"x"}}',
        "a precondition without its sha": '{"content":"v","precondition":{"type":"content_sha256"}}',
        "content null": '{"content":null,"path":null,"precondition":null}',
        "metadata in a memory": '{"metadata":{"a":"b"}}',
    }
    for what, body in upd.items():
        st, _, t = curl(mem + "/" + mid, key=ka, method="POST", body=body)
        check(st in (200, 400), "update with %s: 200 or 400 (%d %s)" % (what, st, t[:160]))
    st, _, t = curl(mem + "/" + mid, key=ka)
    check(st == 200 and json.loads(t)["content"] == "h", "the memory is unchanged after them all: %s" % t[:200])
    for what, body in (("metadata a number", '{"name":"x","metadata":{"k":1}}'),
                       ("metadata a list", '{"name":"x","metadata":["k"]}'),
                       ("name a number", '{"name":5}'), ("no name", '{"description":"d"}')):
        st, _, t = curl(v1, key=ka, method="POST", body=body)
        check(st == 400 and error_type(t)[0] == "invalid_request_error", "store with %s: 400 (%d %s)" % (what, st, t[:160]))
    # Chunked bodies: a small one works, a 2 MiB one is 413.
    st, _, t = curl(mem, key=ka, method="POST", body='{"path":"/chunked.md","content":"c"}',
                    headers=["Transfer-Encoding: chunked"])
    check(st == 200, "a chunked body: 200 (%d %s)" % (st, t[:160]))
    st, _, t = curl(mem, key=ka, method="POST", body=b'{"path":"/c2.md","content":"' + b"c" * (2 << 20) + b'"}',
                    headers=["Transfer-Encoding: chunked"])
    check(st == 413, "a chunked 2 MiB body: 413 (%d %s)" % (st, t[:160]))
    # Headers and URLs out of all proportion; odd ids; odd methods.
    st, _, t = curl(v1, key=ka, headers=["X-Big: " + "b" * 100000])
    check(400 <= st < 500, "a 100 kB header: a 4xx (%d)" % st)
    st, _, t = curl(v1 + "/" + "m" * 100000, key=ka)
    check(400 <= st < 500, "a 100 kB URL: a 4xx (%d)" % st)
    for idpath in ("/MEMSTORE_0123456789ABCDEF", "/memstore_0123456789abcdeg", "/memstore_%zz", "/memstore_0123456789abcdef0",
                   "/" + sid + "/memories/mem_%zz", "/" + sid + "/memories/MEM_0123456789abcdef",
                   "/" + sid + "/memory_versions/memver_-1", "/" + sid + "/memory_versions/memver_99999999999999999999999",
                   "/" + sid + "/memory_versions/memver_0"):
        st, _, t = curl(v1 + idpath, key=ka, raw_path=True)
        check(st in (400, 404) and error_type(t)[0], "id %s: 400/404 (%d %s)" % (idpath, st, t[:160]))
    for q in ("depth=99999999999999999999", "limit=99999999999999999999", "limit=-5", "depth=1&depth=0&limit=1&limit=2"):
        st, _, t = curl(mem + "?" + q, key=ka)
        check(st in (200, 400), "?%s: 200 or 400 (%d %s)" % (q, st, t[:160]))
    for method in ("OPTIONS", "PUT", "PATCH", "TRACE"):
        st, _, t = curl(v1, key=ka, method=method)
        check(st in (404, 405) and error_type(t)[0], "%s on the stores: 405 (%d)" % (method, st))
    st, _, t = curl(base + "/healthz", method="POST")
    check(st == 405, "POST /healthz: 405 (%d)" % st)
    st, _, _ = curl(base + "/healthz")
    check(st == 200, "still healthy after all that")


def slow_clients(base, ka):
    """Many stalled clients at once (half a header; a body promised and not sent; nothing
    at all) hold only their own connections: another client is still served at once."""
    port = int(base.rsplit(":", 1)[1])
    socks = []
    try:
        for i in range(24):
            s = socket.create_connection(("127.0.0.1", port))
            if i % 3 == 0:
                s.sendall(b"GET /v1/memory_stores HTTP/1.1\r\nHost: x\r\nAuthor")
            elif i % 3 == 1:
                s.sendall(b"POST /v1/memory_stores HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ka.encode() +
                          b"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":")
            socks.append(s)
        for _ in range(5):
            t0 = time.monotonic()
            st, _, _ = curl(base + "/v1/memory_stores", key=ka)
            took = time.monotonic() - t0
            check(st == 200 and took < 2, "beside 24 stalled clients, a request is served (%d in %.2f s)" % (st, took))
    finally:
        for s in socks:
            s.close()


def migrate_into_memory_store(base, ka, tmp):
    """memtool --memory-store ID migrate: a memory whose path the API refuses (21 segments: a
    memtool path may have 32) is not copied, with its history or without, and says why; the
    others are."""
    st, _, t = curl(base + "/v1/memory_stores", key=ka, method="POST", body='{"name":"migrated"}')
    sid = json.loads(t)["id"]
    # Nobody has written to it yet: it is there, and empty.
    r = subprocess.run([MEMTOOL, "--root", os.path.join(tmp, "store"), "--tenant", "alice", "--memory-store", sid,
                        "view", "/memories"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and r.stdout.endswith("\n0B\t/memories\n"),
          "a new memory store views as empty: %d %r %r" % (r.returncode, r.stdout, r.stderr))
    src = os.path.join(tmp, "migrate-src")
    deep = "/memories/" + "/".join("d%d" % i for i in range(20)) + "/deep.md"
    for path in (deep, "/memories/ok.md"):
        subprocess.run([MEMTOOL, "--root", src, "call"], input=json.dumps(
            {"command": "create", "path": path, "file_text": "x\n"}), text=True, check=True, capture_output=True)
    for history in ([], ["--no-history"]):
        r = subprocess.run([MEMTOOL, "--root", os.path.join(tmp, "store"), "--tenant", "alice",
                            "--memory-store", sid, "migrate", "--from", "file:" + src, "--from-tenant",
                            "default", "--to", "file:" + os.path.join(tmp, "store")] + history,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "20 segments" in r.stderr and "deep.md" in r.stderr,
              "migrate %s: the 21-segment memory is refused by name: %d %r" % (history, r.returncode, r.stderr[-400:]))
    st, _, t = curl(base + "/v1/memory_stores/" + sid + "/memories?view=full", key=ka)
    paths = sorted(m.get("path") for m in json.loads(t)["data"])
    check(paths == ["/ok.md"], "only the memory the API can serve arrived: %r" % paths)


def encrypted_store(tmp, keys, key):
    """memtool --encrypt server: memories are served as written and sealed on disk (no
    plaintext in any file of the store, the registry's records too); without the key the
    server does not start, and says which key it needs."""
    store, kf = os.path.join(tmp, "store-enc"), os.path.join(tmp, "enc.key")
    memtool("key", "new", kf)
    srv = subprocess.Popen([MEMTOOL, "--root", store, "--encrypt", "--key-file", kf, "server", "--listen",
                            "127.0.0.1:0", "--keys", keys], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    try:
        base = srv.stdout.readline().strip()
        st, _, t = curl(base + "/v1/memory_stores", key=key, method="POST", body='{"name":"SEALEDNAME"}')
        sid = json.loads(t)["id"]
        body = json.dumps({"path": "/sealed.md", "content": "SEALED-MARKER one\n"})
        st, _, t = curl(base + "/v1/memory_stores/" + sid + "/memories", key=key, method="POST", body=body)
        check(st == 200, "a memory is made in an encrypted store: %d %s" % (st, t[:200]))
        mid = json.loads(t)["id"]
        st, _, t = curl(base + "/v1/memory_stores/" + sid + "/memories/" + mid, key=key)
        check(st == 200 and json.loads(t).get("content") == "SEALED-MARKER one\n",
              "and read back as written: %d %s" % (st, t[:200]))
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)
    for d, _, files in os.walk(store):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                data = fh.read()
            check(b"SEALED-MARKER" not in data and b"SEALEDNAME" not in data,
                  "no plaintext on disk: %s" % os.path.join(d, f))
    r = subprocess.run([MEMTOOL, "--root", store, "server", "--listen", "127.0.0.1:0", "--keys", keys],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and r.stdout == "" and "encrypted" in r.stderr and "--key-file" in r.stderr,
          "without its key the server does not start: %d %r" % (r.returncode, r.stderr))


def shutdown_in_flight(tmp, keys, key):
    """SIGTERM while a request is in flight (its headers in, its body still coming): the
    request finishes with its answer, the write is made, and the server exits 0."""
    store = os.path.join(tmp, "store-term")
    err = open(os.path.join(tmp, "err-term"), "w+")
    srv = subprocess.Popen([MEMTOOL, "--root", store, "server", "--listen", "127.0.0.1:0", "--keys", keys],
                           stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        base = srv.stdout.readline().strip()
        st, _, t = curl(base + "/v1/memory_stores", key=key, method="POST", body='{"name":"term"}')
        sid = json.loads(t)["id"]
        body = json.dumps({"path": "/inflight.md", "content": "made while stopping\n"}).encode()
        s = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
        s.settimeout(15)
        s.sendall(b"POST /v1/memory_stores/" + sid.encode() + b"/memories HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer " + key.encode() + b"\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10])
        time.sleep(0.3)
        srv.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        s.sendall(body[10:])
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except (socket.timeout, ConnectionError) as e:
            got += b" <" + str(e).encode() + b">"
        s.close()
        check(got.startswith(b"HTTP/1.1 200"), "a request in flight at SIGTERM is answered: %r" % got[:200])
        code = srv.wait(timeout=20)
        check(code == 0, "SIGTERM with a request in flight: exit 0, not %r" % code)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    r = subprocess.run([MEMTOOL, "--root", store, "--tenant", "alice", "--memory-store", sid, "call"],
                       input='{"command":"view","path":"/memories/inflight.md"}', capture_output=True, text=True,
                       timeout=30)
    check("made while stopping" in r.stdout, "the write in flight at SIGTERM was made: %r" % r.stdout[:200])


def start_stop(tmp, keys):
    """SIGINT stops it as SIGTERM does (exit 0); a port in use, or a store it cannot open, is an
    error exit with a message and no URL on stdout, never a hang."""
    store = os.path.join(tmp, "store-int")
    srv = subprocess.Popen([MEMTOOL, "--root", store, "server", "--listen", "127.0.0.1:0", "--keys", keys],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    base = srv.stdout.readline().strip()
    check(base.startswith("http://127.0.0.1:"), "a second server starts: %r" % base)
    port = base.rsplit(":", 1)[1]
    try:
        r = subprocess.run([MEMTOOL, "--root", store, "server", "--listen", "127.0.0.1:" + port, "--keys", keys],
                           capture_output=True, text=True, timeout=20)
        check(r.returncode != 0 and r.stdout == "" and r.stderr.strip() != "",
              "a port in use: an error exit with a message (%d %r)" % (r.returncode, r.stderr[:200]))
    except subprocess.TimeoutExpired:
        check(False, "a port in use: the server hangs instead of failing")
    srv.send_signal(signal.SIGINT)
    try:
        code = srv.wait(timeout=20)
    except subprocess.TimeoutExpired:
        srv.kill()
        code = "hung"
    check(code == 0, "SIGINT: exit 0, not %r" % code)
    for bad in (["--store", "sqlite:" + os.path.join(tmp, "no", "such", "dir", "x.db")],
                ["--root", os.path.join(tmp, "outside.txt")]):
        try:
            # A store that cannot be opened fails at once: 5 s is plenty, and bounds the wait if not.
            r = subprocess.run([MEMTOOL, *bad, "server", "--listen", "127.0.0.1:0", "--keys", keys],
                               capture_output=True, text=True, timeout=5)
            check(r.returncode != 0 and r.stdout == "" and r.stderr.strip() != "",
                  "a store it cannot open (%s): an error exit with a message (%d %r %r)" % (
                      bad[1], r.returncode, r.stdout[:100], r.stderr[:200]))
        except subprocess.TimeoutExpired:
            check(False, "a store it cannot open (%s): the server runs instead of failing" % bad[1])


def listen_checks(tmp, keys, key):
    """Loopback unless told otherwise; HTTPS with a certificate."""
    store = os.path.join(tmp, "store")
    r = subprocess.run([MEMTOOL, "--root", store, "server", "--listen", "0.0.0.0:0", "--keys", keys],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode != 0 and "--tls-cert" in r.stderr and "--insecure-http" in r.stderr and not r.stdout,
          "a non-loopback address without TLS is refused: %r" % r.stderr)
    cert, pkey = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", pkey, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1"], capture_output=True, check=True)
    for extra, scheme, warns in ((["--listen", "0.0.0.0:0", "--insecure-http"], "http", True),
                                 (["--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", pkey], "https", False)):
        err = open(os.path.join(tmp, "err-" + scheme), "w+")
        srv = subprocess.Popen([MEMTOOL, "--root", store, "server", "--keys", keys, *extra],
                               stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            base = srv.stdout.readline().strip()
            check(base.startswith(scheme + "://"), "%s: the URL %r" % (scheme, base))
            port = base.rsplit(":", 1)[1]
            url = "%s://127.0.0.1:%s/v1/memory_stores" % (scheme, port)
            out = subprocess.run(["curl", "-sk", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                                  "-H", "Authorization: Bearer " + key, url], capture_output=True, text=True).stdout
            check(out == "200", "%s: a request is answered (%s)" % (scheme, out))
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=20)
        err.seek(0)
        check(("warning" in err.read()) == warns, "%s: a warning exactly when in the clear" % scheme)


if __name__ == "__main__":
    main()
