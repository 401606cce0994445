#!/usr/bin/env python3
"""memtool server against what the SDK never sends, through curl: broken
and hostile requests, keys missing, revoked or of another tenant, a slow
client. Every answer is the API's error shape; none is a 500."""
import json
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


def check(cond, what):
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
    out = subprocess.run(cmd, input=inp, capture_output=True, check=True).stdout.decode("utf-8", "replace")
    head, _, text = out.partition("\r\n\r\n")
    while head.startswith("HTTP/1.1 100"):
        head, _, text = text.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
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
    finally:
        srv.send_signal(signal.SIGTERM)
        code = srv.wait(timeout=20)
        check(code == 0, "SIGTERM: exit 0, not %r" % code)
    log.seek(0)
    lines = [l for l in log.read().splitlines() if l.startswith("{")]
    check(len(lines) > 20, "an access log line per request")
    for l in lines:
        j = json.loads(l)
        check({"request_id", "method", "path", "status", "ms"} <= set(j), "log fields: " + l)
    text = "\n".join(lines)
    for secret in (ka, kb, kadmin, kgone, "EDGE-CONTENT-MARKER"):
        check(secret not in text, "the log never holds a key or content")
    listen_checks(tmp, keys, ka)
    if failures:
        print("%d failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("http_edges: all passed")


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
