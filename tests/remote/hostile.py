#!/usr/bin/env python3
"""The remote store against a stand-in of the hosted API that is as unkind as
the SDK documents a server may be, where memtool server is kinder: pages of
at most 20 items whatever the view, next_page cursors, 409s without
x-should-retry, a 429 with retry-after, a 500 in the middle of a directory's
rename, connections dropped before an answer or in the middle of one. Every command must end with a
correct result or a clear error, and nothing may be lost.

The stand-in (in this file, on loopback, one thread a connection) keeps the
memories of one store in memory, with the API's shapes and rules for what
the remote store uses; faults are armed by the test between commands.

usage: MEMTOOL=path/to/memtool hostile.py
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MEMTOOL = os.environ["MEMTOOL"]
STORE = "memstore_hostile01"
KEY = "sk-test-hostile-key-0123456789"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what)


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.mems = {}  # id -> {"path", "content"}
        self.next_id = 1
        self.version = 0
        self.faults = {}  # name -> remaining count (or a value)
        self.log = []  # (method, path) of each request
        self.changes = 0  # updates that changed a memory
        self.versions = []  # oldest first: the API's memory_version objects

    def take(self, name):
        """Use one of an armed fault: its value, or None."""
        v = self.faults.get(name)
        if v is None:
            return None
        if isinstance(v, int):
            if v <= 0:
                return None
            self.faults[name] = v - 1
        return v


S = State()


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def mem_json(mid, m, full):
    S.version += 0
    return {"id": mid, "type": "memory", "memory_store_id": STORE, "path": m["path"],
            "content": m["content"] if full else None, "content_sha256": sha(m["content"]),
            "content_size_bytes": len(m["content"].encode()), "memory_version_id": m["vid"],
            "created_at": "2026-11-29T00:00:00Z", "updated_at": "2026-11-29T00:00:00Z"}


def record(mid, op, m):
    """A version of the change just made, with an id of no form memtool knows."""
    vid = "memver_" + hashlib.sha1(b"v%d" % len(S.versions)).hexdigest()[:22]
    gone = op == "deleted"
    S.versions.append({"id": vid, "type": "memory_version", "memory_id": mid, "memory_store_id": STORE,
                       "operation": op, "created_at": "2026-11-29T00:00:%02d.%03dZ" % (
                           len(S.versions) // 1000 % 60, len(S.versions) % 1000),
                       "created_by": {"type": "api_actor", "api_key_id": "apikey_hostile"},
                       "path": m["path"], "content": None if gone else m["content"],
                       "content_sha256": None if gone else sha(m["content"]),
                       "content_size_bytes": None if gone else len(m["content"].encode()),
                       "redacted_at": None, "redacted_by": None})
    m["vid"] = vid


def version_json(v, full):
    v = dict(v)
    if not full:
        v["content"] = None
    return v


def overlap(a, b):
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, etype, message, **extra):
        err = {"type": etype, "message": message}
        err.update(extra)
        # No x-should-retry: the hosted API's SDK would retry a 409 itself.
        self.answer(status, {"type": "error", "error": err, "request_id": "req_hostile"})

    def cut(self, status, body):
        """Half an answer, then the connection closed."""
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:len(data) // 2])
        self.wfile.flush()
        self.drop()

    def drop(self):
        """Close the connection without an answer."""
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def handle_any(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        n = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(n) or b"null") if n else None
        with S.lock:
            S.log.append((method, u.path))
        if self.headers.get("authorization") != "Bearer " + KEY or self.headers.get("x-api-key") != KEY:
            return self.error(401, "authentication_error", "bad key")
        if self.headers.get("anthropic-beta") != "agent-memory-2026-07-22" or \
                self.headers.get("anthropic-version") != "2026-10-21":
            return self.error(400, "invalid_request_error", "missing beta or version header")
        with S.lock:
            if S.take("429") is not None:
                return self.answer(429, {"type": "error", "error": {"type": "rate_limit_error",
                                   "message": "slow down"}}, [("retry-after", "1")])
            if method == "GET" and S.take("drop_get") is not None:
                return self.drop()
        base = "/v1/memory_stores/" + STORE
        p = u.path
        if not p.startswith(base):
            return self.error(404, "not_found_error", "no such store")
        p = p[len(base):]
        with S.lock:
            if p == "/memories" and method == "GET":
                return self.list(q)
            if p == "/memories" and method == "POST":
                return self.create(body)
            m = re.fullmatch(r"/memories/(mem_\w+)", p)
            if m and method == "GET":
                mid = m.group(1)
                if mid not in S.mems:
                    return self.error(404, "not_found_error", "no memory")
                return self.answer(200, mem_json(mid, S.mems[mid], q.get("view", "full") == "full"))
            if m and method == "POST":
                return self.update(m.group(1), body)
            if m and method == "DELETE":
                mid = m.group(1)
                if mid not in S.mems:
                    return self.error(404, "not_found_error", "no memory")
                exp = q.get("expected_content_sha256")
                if S.take("race_delete") is not None:
                    S.mems[mid]["content"] += "racer\n"  # another writer, just before the delete
                if exp and exp != sha(S.mems[mid]["content"]):
                    return self.error(409, "memory_precondition_failed_error", "changed")
                record(mid, "deleted", S.mems[mid])
                del S.mems[mid]
                if S.take("cut_delete") is not None:
                    return self.cut(200, {"id": mid, "type": "memory_deleted"})
                return self.answer(200, {"id": mid, "type": "memory_deleted"})
            if p == "/memory_versions" and method == "GET":
                vs = [v for v in reversed(S.versions)
                      if not q.get("memory_id") or v["memory_id"] == q["memory_id"]]
                size = min(int(q.get("limit", "20")), 20)
                cycle = S.faults.get("cycle_versions")
                start = int(base64.b64decode(q["page"]).decode()) if q.get("page") and not cycle else 0
                nxt = base64.b64encode(str(start + size).encode()).decode() if start + size < len(vs) else None
                if S.take("loop_versions") is not None:
                    nxt = base64.b64encode(b"0").decode()  # the same cursor, again and again
                if cycle:
                    nxt = {None: "A", "A": "B", "B": "A"}[q.get("page")]  # A, B, A, B, ...
                return self.answer(200, {"data": [version_json(v, q.get("view") == "full")
                                                  for v in vs[start:start + size]], "next_page": nxt})
            m = re.fullmatch(r"/memory_versions/(memver_\w+)(/redact)?", p)
            if m:
                found = [v for v in S.versions if v["id"] == m.group(1)]
                if not found:
                    return self.error(404, "not_found_error", "no version")
                v = found[0]
                if m.group(2) and method == "POST":
                    if any(x.get("vid") == v["id"] for x in S.mems.values()):
                        return self.error(409, "conflict_error", "the current version")
                    v.update(path=None, content=None, content_sha256=None, content_size_bytes=None,
                             redacted_at="2026-11-29T01:00:00Z",
                             redacted_by={"type": "api_actor", "api_key_id": "apikey_hostile"})
                    return self.answer(200, version_json(v, False))
                if method == "GET":
                    return self.answer(200, version_json(v, q.get("view", "full") == "full"))
        return self.error(404, "not_found_error", "no such endpoint")

    def list(self, q):
        prefix = q.get("path_prefix", "/")
        depth = int(q.get("depth", "0"))
        items, seen = [], set()
        for mid, m in sorted(S.mems.items(), key=lambda kv: kv[1]["path"]):
            if not m["path"].startswith(prefix):
                continue
            rest = m["path"][len(prefix):]
            if depth == 1 and "/" in rest:
                d = prefix + rest.split("/")[0] + "/"
                if d not in seen:
                    seen.add(d)
                    items.append({"type": "memory_prefix", "path": d})
                continue
            items.append(mem_json(mid, m, q.get("view") == "full"))
        # Pages of at most 20, whatever the view or the limit asked for.
        size = min(int(q.get("limit", "20")), 20)
        start = int(base64.b64decode(q["page"]).decode()) if q.get("page") else 0
        if S.faults.get("fat_page"):  # more items on one page than any limit asks for
            return self.answer(200, {"data": [{"type": "memory_prefix", "path": "/f%d/" % i}
                                              for i in range(101)], "next_page": None})
        if S.faults.get("endless_prefixes"):  # new prefixes and new cursors without end
            return self.answer(200, {"data": [{"type": "memory_prefix", "path": "/e%d/" % (start + i)}
                                              for i in range(20)],
                                     "next_page": base64.b64encode(str(start + 20).encode()).decode()})
        page = items[start:start + size]
        nxt = base64.b64encode(str(start + size).encode()).decode() if start + size < len(items) else None
        return self.answer(200, {"data": page, "next_page": nxt})

    def create(self, body):
        path, content = body["path"], body["content"]
        if S.faults.get("cap") and len(S.mems) >= 2000:  # the API's words are not documented
            return self.error(400, "invalid_request_error", "memory store is full")
        for mid, m in S.mems.items():
            if overlap(m["path"], path):
                return self.error(409, "memory_path_conflict_error", "taken",
                                  conflicting_memory_id=mid, conflicting_path=m["path"])
        mid = "mem_h%06d" % S.next_id  # not memtool's form: ids are hashed
        S.next_id += 1
        S.version += 1
        S.mems[mid] = {"path": path, "content": content, "v": S.version}
        record(mid, "created", S.mems[mid])
        if S.take("drop_create") is not None:
            return self.drop()  # done, but the client never hears of it
        return self.answer(200, mem_json(mid, S.mems[mid], False))

    def update(self, mid, body):
        if mid not in S.mems:
            return self.error(404, "not_found_error", "no memory")
        m = S.mems[mid]
        bad = S.faults.get("500_path")
        if bad and m["path"] == bad:
            return self.error(500, "api_error", "internal error")
        if S.take("move") is not None:
            m["path"] = m["path"] + ".moved"  # another client's rename, content kept
            S.version += 1
            m["v"] = S.version
            record(mid, "modified", m)
        race = S.take("race")
        if race is not None:
            m["content"] = m["content"] + "racer\n"  # another writer got there first
            S.version += 1
            m["v"] = S.version
            record(mid, "modified", m)
        pre = body.get("precondition")
        new_path, new_content = body.get("path", m["path"]), body.get("content", m["content"])
        strict = S.faults.get("strict_repeat")  # a server that refuses even a repeat of its own change
        if pre and pre["content_sha256"] != sha(m["content"]) and \
                (strict or not (new_path == m["path"] and new_content == m["content"])):
            return self.error(409, "memory_precondition_failed_error", "changed")
        if new_path != m["path"]:
            for other, o in S.mems.items():
                if other != mid and overlap(o["path"], new_path):
                    return self.error(409, "memory_path_conflict_error", "taken",
                                      conflicting_memory_id=other, conflicting_path=o["path"])
        if (new_path, new_content) != (m["path"], m["content"]):
            S.version += 1
            m.update(path=new_path, content=new_content, v=S.version)
            S.changes += 1
            record(mid, "modified", m)
        if S.take("cut_update") is not None:
            return self.cut(200, mem_json(mid, m, False))  # done; the answer cut short
        return self.answer(200, mem_json(mid, m, False))

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")


def call(url, tool):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    env["MEMTOOL_API_KEY"] = KEY
    r = subprocess.run([MEMTOOL, "--store", url, "call"], input=json.dumps(tool).encode(),
                       capture_output=True, timeout=60, env=env)
    return r.returncode, r.stdout.decode()


def env_plain():
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}


def paths():
    with S.lock:
        return sorted(m["path"] for m in S.mems.values())


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/v1/memory_stores/%s" % (srv.server_address[1], STORE)

    # Pages of 20, cursors followed: 45 memories in one directory.
    for i in range(45):
        rc, out = call(url, {"command": "create", "path": "/memories/p/m%02d.md" % i, "file_text": "m%d\n" % i})
        check(rc == 0, "create m%02d: %r" % (i, out))
    rc, out = call(url, {"command": "view", "path": "/memories/p"})
    check(rc == 0 and all("/memories/p/m%02d.md" % i in out for i in range(45)),
          "a listing over three pages of 20 has all 45: %r" % out[-300:])
    rc, out = call(url, {"command": "view", "path": "/memories/p/m44.md"})
    check(rc == 0 and "m44" in out, "a memory past the first full page is found: %r" % out)

    # 429 with retry-after: 1, then the answer.
    S.faults["429"] = 1
    t = time.time()
    rc, out = call(url, {"command": "view", "path": "/memories/p/m01.md"})
    check(rc == 0 and "m1" in out and time.time() - t >= 1.0,
          "a 429 with retry-after 1 is waited out: %r in %.2fs" % (out, time.time() - t))

    # A 409 without x-should-retry: a racing writer twice, then the edit goes through.
    S.faults["race"] = 2
    rc, out = call(url, {"command": "str_replace", "path": "/memories/p/m02.md", "old_str": "m2",
                         "new_str": "M2"})
    with S.lock:
        content = [m["content"] for m in S.mems.values() if m["path"] == "/p/m02.md"][0]
    check(rc == 0 and content == "M2\nracer\nracer\n",
          "an edit that meets 409s reads again and loses nothing: %r %r" % (out, content))
    # A writer that always wins: the edit gives up, says so, writes nothing of its own.
    S.faults["race"] = 100
    rc, out = call(url, {"command": "insert", "path": "/memories/p/m03.md", "insert_line": 0,
                         "insert_text": "mine\n"})
    S.faults["race"] = 0
    with S.lock:
        content = [m["content"] for m in S.mems.values() if m["path"] == "/p/m03.md"][0]
    check(rc == 1 and "kept changing" in out and "mine" not in content,
          "endless 409s: a clear error after a bounded number of tries: %r" % out)

    # A rename by another client between the read and the write, content kept: the
    # precondition cannot see it (the API has no path precondition); the answer's path shows it.
    S.faults["move"] = 1
    rc, out = call(url, {"command": "str_replace", "path": "/memories/p/m04.md", "old_str": "m4",
                         "new_str": "M4"})
    with S.lock:
        content = [m["content"] for m in S.mems.values() if m["path"] == "/p/m04.md.moved"]
    check(rc == 1 and "was moved to /p/m04.md.moved by another client while it was edited" in out
          and content == ["M4\n"], "an edit that landed on a moved memory says so: %r %r" % (out, content))

    # A 500 in the middle of a directory's rename: it says how far it got; nothing is lost.
    for i in range(5):
        call(url, {"command": "create", "path": "/memories/d/f%d.md" % i, "file_text": "f%d\n" % i})
    S.faults["500_path"] = "/d/f2.md"
    t = time.time()
    rc, out = call(url, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    S.faults["500_path"] = None
    got = [p for p in paths() if p.startswith(("/d/", "/e/"))]
    check(rc == 1 and "moved 2 of the 5 memories beneath /d, then failed on /d/f2.md" in out
          and "the rest are as they were" in out,
          "a rename failing midway says what was done: %r" % out)
    check(got == ["/d/f2.md", "/d/f3.md", "/d/f4.md", "/e/f0.md", "/e/f1.md"],
          "every memory is at its old or its new path: %r" % got)
    check(time.time() - t < 30, "the retries of a 500 are bounded: %.1fs" % (time.time() - t))
    rc, out = call(url, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e2"})
    check(rc == 0, "the rest moves once the server works: %r" % out)

    # A connection dropped before the answer: a read is sent again...
    S.faults["drop_get"] = 1
    rc, out = call(url, {"command": "view", "path": "/memories/p/m05.md"})
    check(rc == 0 and "m5" in out, "a read whose connection dropped is sent again: %r" % out)
    # An update whose answer is cut mid-body: sent again under its precondition, which
    # the API answers with success (the memory holds what was asked): one change, not two.
    S.faults["cut_update"] = 1
    before, logged = S.changes, len(S.log)
    rc, out = call(url, {"command": "insert", "path": "/memories/p/m06.md", "insert_line": 1,
                         "insert_text": "once\n"})
    with S.lock:
        content = [m["content"] for m in S.mems.values() if m["path"] == "/p/m06.md"][0]
    check(rc == 0 and content == "m6\nonce\n" and S.changes == before + 1,
          "an edit whose answer was cut is made once: %r %r (%d changes)" % (out, content, S.changes - before))
    updates = [r for r in S.log[logged:] if r[0] == "POST" and "/memories/mem_" in r[1]]
    check(len(updates) == 2, "the cut update was sent again: %d sent" % len(updates))
    # A delete whose answer is cut: sent again, it finds the memory gone, and that is success.
    S.faults["cut_delete"] = 1
    rc, out = call(url, {"command": "delete", "path": "/memories/p/m07.md"})
    check(rc == 0 and "/p/m07.md" not in paths(), "a delete whose answer was cut succeeds: %r" % out)
    # ...a create is not, and says how to check.
    S.faults["drop_create"] = 1
    before = len(S.log)
    rc, out = call(url, {"command": "create", "path": "/memories/c.md", "file_text": "c\n"})
    creates = [r for r in S.log[before:] if r == ("POST", "/v1/memory_stores/%s/memories" % STORE)]
    check(rc == 1 and "may or may not have happened" in out and "view the path" in out,
          "a create whose answer was lost: a clear error: %r" % out)
    check(len(creates) == 1, "a create is never sent twice blindly: %d sent" % len(creates))
    rc, out = call(url, {"command": "view", "path": "/memories/c.md"})
    check(rc == 0 and "c" in out, "the view the error advises shows it: %r" % out)

    # An edit whose answer was cut, against a server stricter than the SDK documents: the repeat is refused
    # with 409, and the edit reads again, finds its own write in place, and is made once.
    S.faults["cut_update"] = 1
    S.faults["strict_repeat"] = True
    before = S.changes
    rc, out = call(url, {"command": "insert", "path": "/memories/p/m08.md", "insert_line": 1,
                         "insert_text": "once\n"})
    S.faults.pop("strict_repeat", None)
    with S.lock:
        content = [m["content"] for m in S.mems.values() if m["path"] == "/p/m08.md"][0]
    check(rc == 0 and content == "m8\nonce\n" and S.changes == before + 1,
          "a repeat a strict server refuses is not made twice: %r %r" % (out, content))

    # A history whose next_page comes back the same: an error that says so, never a
    # history cut short as if it were whole, nor a read without end.
    with S.lock:
        S.faults["loop_versions"] = 100
    r = subprocess.run([MEMTOOL, "--store", url, "log", "--actor", "nobody"], capture_output=True,
                       text=True, env=dict(env_plain(), MEMTOOL_API_KEY=KEY), timeout=60)
    check(r.returncode != 0 and "leads back to a page already read" in r.stderr,
          "a repeating history cursor fails the command: %r %r" % (r.stdout, r.stderr))
    with S.lock:
        S.faults.pop("loop_versions", None)
    # Cursors that come back after others (A, B, A): remembered, all of them.
    with S.lock:
        S.faults["cycle_versions"] = True
    r = subprocess.run([MEMTOOL, "--store", url, "log", "--actor", "nobody"], capture_output=True,
                       text=True, env=dict(env_plain(), MEMTOOL_API_KEY=KEY), timeout=60)
    check(r.returncode != 0 and "leads back to a page already read" in r.stderr,
          "a history cursor cycle A, B, A fails the command: %r %r" % (r.stdout, r.stderr))
    with S.lock:
        S.faults.pop("cycle_versions", None)
    # A page of more items than asked for, and prefixes without end (counted as memories
    # are): refused, and the command ends.
    for fault, said in (("fat_page", "a page of more items than asked for"),
                        ("endless_prefixes", "more items than a memory store holds")):
        with S.lock:
            S.faults[fault] = True
        r = subprocess.run([MEMTOOL, "--store", url, "view", "/memories"], capture_output=True,
                           text=True, env=dict(env_plain(), MEMTOOL_API_KEY=KEY), timeout=60)
        with S.lock:
            S.faults.pop(fault, None)
        check(r.returncode != 0 and said in r.stdout + r.stderr,
              "%s: the listing is refused: %r %r" % (fault, r.stdout, r.stderr))

    # History with version ids of no form memtool knows (memver_ and hex): ids 2^62 and up,
    # the same in every process, found again by a scan; show, restore and redact by them.
    call(url, {"command": "create", "path": "/memories/h.md", "file_text": "v1\n"})
    call(url, {"command": "str_replace", "path": "/memories/h.md", "old_str": "v1", "new_str": "v2"})
    ids = []
    for _ in range(2):  # two processes
        r = subprocess.run([MEMTOOL, "--store", url, "log", "/memories/h.md"], capture_output=True,
                           text=True, env=dict(env_plain(), MEMTOOL_API_KEY=KEY))
        ids.append([int(l.split()[0]) for l in r.stdout.splitlines()])
    check(len(ids[0]) == 2 and ids[0] == ids[1] and all(i >= 2 ** 62 for i in ids[0]),
          "a foreign server's version ids: stable across processes, above 2^62: %r" % ids)
    if len(ids[0]) == 2:
        first = str(ids[0][1])
        r = subprocess.run([MEMTOOL, "--store", url, "show", first], capture_output=True, text=True,
                           env=dict(env_plain(), MEMTOOL_API_KEY=KEY))
        check(r.stdout == "v1\n", "show by a hashed id: %r %r" % (r.stdout, r.stderr))
        r = subprocess.run([MEMTOOL, "--store", url, "restore", first], capture_output=True, text=True,
                           env=dict(env_plain(), MEMTOOL_API_KEY=KEY))
        rc2, out2 = call(url, {"command": "view", "path": "/memories/h.md"})
        check(r.returncode == 0 and "v1" in out2, "restore by a hashed id: %r %r" % (r.stdout + r.stderr, out2))
        r = subprocess.run([MEMTOOL, "--store", url, "redact", first], capture_output=True, text=True,
                           env=dict(env_plain(), MEMTOOL_API_KEY=KEY))
        with S.lock:
            red = [v for v in S.versions if v["memory_id"] and v["redacted_at"]]
        check(r.returncode == 0 and len(red) == 1, "redact by a hashed id: %r" % (r.stdout + r.stderr))

    # A server path memtool would refuse (an escape character, a format character):
    # the listing fails saying the server's answer is wrong; the name reaches no output.
    for bad in ("/bad/\x1b[2Jx.md", "/bad/a\u202eb.md"):
        with S.lock:
            S.mems["mem_bad"] = {"path": bad, "content": "x\n", "vid": "memver_bad"}
        rc, out = call(url, {"command": "view", "path": "/memories/bad"})
        check(rc != 0 and bad[5:] not in out, "a server path with %r is refused: %r" % (bad, out))
        with S.lock:
            S.mems.pop("mem_bad", None)

    # A precondition the server finds broken (another writer came in between the read and
    # the change): the error names the content there now, not the one read.
    for cmd, fault in (({"command": "delete", "path": "/memories/race.md"}, "race_delete"),
                       ({"command": "rename", "old_path": "/memories/race.md",
                         "new_path": "/memories/race2.md"}, "race")):
        call(url, {"command": "delete", "path": "/memories/race.md"})
        call(url, {"command": "create", "path": "/memories/race.md", "file_text": "r\n"})
        with S.lock:
            S.faults[fault] = 1
        rc, out = call(url, dict(cmd, expected_sha256=sha("r\n")))
        with S.lock:
            S.faults.pop(fault, None)
        check(rc != 0 and "sha256 now %s" % sha("r\nracer\n") in out,
              "%s refused by the server: the content now is named: %r" % (cmd["command"], out))

    # A full store (the API's 2,000 memories): a create the server refuses says so in
    # memtool's words.
    with S.lock:
        for i in range(2000 - len(S.mems)):
            S.mems["mem_full%04d" % i] = {"path": "/full/m%04d.md" % i, "content": "x\n", "vid": "memver_f"}
        S.faults["cap"] = True
    rc, out = call(url, {"command": "create", "path": "/memories/one-more.md", "file_text": "x\n"})
    with S.lock:
        S.faults.pop("cap", None)
        for k in [k for k in S.mems if k.startswith("mem_full")]:
            del S.mems[k]
    check(rc != 0 and "holds 2000 memories, the memory-store API's limit of 2,000 a store" in out,
          "a create into a full store: %r" % out)

    # A delete of a directory spanning pages; a key the server refuses.
    rc, out = call(url, {"command": "delete", "path": "/memories/p"})
    check(rc == 0 and not any(p.startswith("/p/") for p in paths()), "a directory's delete over pages: %r" % out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    env["MEMTOOL_API_KEY"] = "wrong"
    r = subprocess.run([MEMTOOL, "--store", url, "view", "/memories"], capture_output=True, text=True, env=env)
    check(r.returncode != 0 and "401" in (r.stdout + r.stderr) and "wrong" not in (r.stdout + r.stderr),
          "a refused key: 401, the key not shown: %r" % (r.stdout + r.stderr))
    srv.shutdown()
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
