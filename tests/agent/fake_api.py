"""A stand-in for the Messages API on 127.0.0.1, for memtool's agent tests.

It answers POST /v1/messages from a script of exchanges, one per request, in
order, and checks every request it receives: the headers, that the body is a
well-formed Messages request with the memory tool, that every assistant
message sent back is exactly what it answered before, that tool_use blocks are
answered by tool_result blocks first and in order, and whatever the exchange
itself expects (exact tool_result blocks, context_management, ...).

An exchange's "respond" says how to answer:
  {"message": {...}}       a Messages response; streamed as SSE when the request
                           asked for a stream, whole JSON otherwise
  {"status": 529, "error": {"type": ..., "message": ...}, "headers": {...}}
  {"sse": "raw text"} or {"sse_file": "name"}   a stream exactly as written
  {"close": true}          close the connection without answering
  {"hang": true}           answer nothing until the client goes away
Stream options: "framing" ("\\n", "\\r\\n" or "\\r"), "chunk" (bytes per write),
"cut_after_events" (drop the connection mid-stream), "truncate_input" (cut the
streamed JSON of the last tool input after that many characters),
"extra_events" (inserted after message_start), "gate" (after the first text
delta, wait until the test says it was seen). "echo" is the content the client
must send back in later requests (default: the message's content; false: none,
the default for raw streams). "cut_body_at" (a reply that is not streamed: the
connection drops after that many bytes of its body). "lose_answer": the server makes the reply (and
keeps it on its thread) but the connection drops before any of it is sent.

Message threads (beta message-threads-2026-08-12), when the server is made with
threads="on" or "off" (memtool's runs; other clients' leave it None):
  "on"   every request must carry "thread" until the server refused one with
         thread_unsupported_request, and none after. A create holds the whole
         history; the server keeps each reply's thread (its messages, system and
         tools) under the reply's id, and a continue names one and holds only
         the new messages (none after pause_turn or compaction), without system
         and tools. The checks and expectations then apply to the whole
         conversation the thread makes; "sent" and "sent_messages_count" to
         the body as it came. The server answers on its own, without using an
         exchange: 404 thread_not_found for a reply it does not hold (an
         exchange with "forget_threads": true has it forget every thread
         first), 400 thread_already_continued for a reply continued before,
         and 400 thread_unsupported_request for a threaded request with a
         field of `thread_unsupported` (e.g. ["context_management"]).
  "off"  no request may carry "thread".
The anthropic-beta header must then name exactly the betas the body needs, and
an exchange's "expect_thread" applies to a request sent on a thread,
"expect_unthreaded" to one sent without.
"""

import copy
import json
import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_KEY = "sk-ant-test-0123456789"
MEMORY_TOOL = [{"type": "memory_20250818", "name": "memory"}]
# memtool's agent offers its search beside memory (unless --no-search): a custom
# tool whose input is exactly this.
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string",
                  "description": "Words, \"phrases in quotes\" and prefixes (word*) that must all occur; -word excludes, a OR b takes either"},
        "path": {"type": "string",
                 "description": "Search at or beneath this directory, e.g. /memories/project "
                                "(default /memories)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                  "description": "At most this many memories (default 10)"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
HERE = os.path.dirname(os.path.abspath(__file__))


def subset_mismatch(want, got, path="body"):
    """Where `got` differs from `want`, comparing dicts only on want's keys."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k, v in want.items():
            if v is None:
                if k in got:
                    return "%s.%s should be absent, is %r" % (path, k, got[k])
                continue
            if k not in got:
                return "%s.%s is missing" % (path, k)
            bad = subset_mismatch(v, got[k], "%s.%s" % (path, k))
            if bad:
                return bad
        return None
    if want != got or type(want) is not type(got):
        return "%s is %s, expected %s" % (path, json.dumps(got), json.dumps(want))
    return None


def full_message(msg, n):
    """A response message with the fields the real API always has."""
    m = {"id": "msg_%04d" % n, "type": "message", "role": "assistant",
         "model": "claude-sonnet-4-5-20250929"}
    m.update(copy.deepcopy(msg))
    m.setdefault("stop_sequence", None)
    m.setdefault("usage", {"input_tokens": 100 + n, "output_tokens": 10 + n})
    return m


def pieces(s, size):
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def stream_events(msg, opts):
    """The SSE events of a message, as the API streams them."""
    start = copy.deepcopy(msg)
    start["content"] = []
    start["stop_reason"] = None
    start["stop_sequence"] = None
    start["context_management"] = None
    usage = msg.get("usage", {})
    start["usage"] = dict(usage, output_tokens=1)
    ev = [("message_start", {"type": "message_start", "message": start})]
    for e in opts.get("extra_events", []):
        ev.append((e["event"], e["data"]))
    blocks = msg.get("content", [])
    for i, b in enumerate(blocks):
        t = b.get("type")
        if t == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": dict(b, text="")}))
            ev.append(("ping", {"type": "ping"}))
            for p in pieces(b["text"], 4):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": p}}))
        elif t == "tool_use":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": dict(b, input={})}))
            text = json.dumps(b["input"])
            if "truncate_input" in opts and i == len(blocks) - 1:
                text = text[:opts["truncate_input"]]
            for p in [""] + pieces(text, 5):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": p}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": b}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    delta = {"type": "message_delta",
             "delta": {"stop_reason": msg.get("stop_reason"),
                       "stop_sequence": msg.get("stop_sequence")},
             "usage": {"output_tokens": usage.get("output_tokens", 0)}}
    if "context_management" in msg:
        delta["context_management"] = msg["context_management"]
    ev.append(("message_delta", delta))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


def encode_events(events, framing):
    out = []
    for name, data in events:
        out.append("event: %s%sdata: %s%s%s" % (name, framing, json.dumps(data), framing, framing))
    return out


class FakeAPI:
    """The server, and what it saw."""

    def __init__(self, exchanges, echo_check=True, versions=("2023-06-01",), bearer=False,
                 search_tool=False, threads=None, thread_unsupported=()):
        self.exchanges = exchanges
        self.search_tool = search_tool
        self.echo_check = echo_check
        # Other clients than memtool's: the API versions they may send, and whether the
        # key comes as "Authorization: Bearer KEY" (the TypeScript SDK since 1.0) instead
        # of x-api-key. Either way it must be the key, and nothing else is relaxed.
        self.versions = versions
        self.bearer = bearer
        self.threads = threads
        self.thread_unsupported = list(thread_unsupported)
        self.held = {}           # reply id -> the thread it ends: messages, system, tools, stop
        self.continued = set()   # reply ids a request continued
        self.unthreaded = False  # a thread_unsupported_request was answered
        self.forgotten = set()   # exchanges whose forget_threads was done
        self.thread_errors = []  # the error codes answered, in order
        self.replays = set()     # replies to a create that replaced a lost thread
        self.next = 0
        self.failures = []
        self.requests = []  # (time, body) for every request
        self.echoes = []    # the assistant content the client must send back, in order
        self.last_answer_end = None
        self.gate = threading.Event()
        self.gate_reached = threading.Event()
        self.client_went_away = threading.Event()
        self.lock = threading.RLock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                fake.handle(self)

            def do_GET(self):
                fake.fail("unexpected GET %s" % self.path)
                self.send_error(404)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def fail(self, why):
        with self.lock:
            self.failures.append("request %d: %s" % (len(self.requests), why))

    # ---- checks ----

    def check_headers(self, h, body):
        want = {"content-type": "application/json"}
        if self.bearer:
            want["authorization"] = "Bearer " + API_KEY
            want["x-api-key"] = None
        else:
            want["x-api-key"] = API_KEY
            want["authorization"] = None
        for k, v in want.items():
            if h.get(k) != v:
                self.fail("header %s is %r, expected %r" % (k, h.get(k), v))
        if h.get("anthropic-version") not in self.versions:
            self.fail("header anthropic-version is %r, expected one of %r"
                      % (h.get("anthropic-version"), self.versions))
        beta = [b.strip() for b in (h.get("anthropic-beta") or "").split(",") if b.strip()]
        if self.threads is None:
            if "context-management-2025-06-27" not in beta:
                self.fail("anthropic-beta %r lacks context-management-2025-06-27"
                          % h.get("anthropic-beta"))
            return
        need = []
        edits = (body.get("context_management") or {}).get("edits") or []
        if edits:
            need.append("context-management-2025-06-27")
        if any(e.get("type") == "compact_20260112" for e in edits):
            need.append("compact-2026-01-12")
        if "thread" in body:
            need.append("message-threads-2026-08-12")
        if sorted(beta) != sorted(need):
            self.fail("anthropic-beta is %r, expected %r" % (h.get("anthropic-beta"),
                                                            ",".join(need)))

    def thread_view(self, body):
        """The whole request a threaded body stands for, or an error to answer
        (status, error_code, details)."""
        thread = body.get("thread")
        if self.threads == "off":
            if thread is not None:
                self.fail("a thread with threads off: %s" % json.dumps(thread))
            return body, None
        if thread is None:
            if not self.unthreaded:
                self.fail("no thread field, with threads on")
            return body, None
        if self.unthreaded:
            self.fail("a thread after the server answered thread_unsupported_request")
        unsupported = [f for f in self.thread_unsupported if f in body]
        if unsupported:
            self.unthreaded = True
            return None, (400, "thread_unsupported_request", {"unsupported": unsupported})
        full = {k: v for k, v in body.items() if k != "thread"}
        if thread == {"type": "create"}:
            return full, None
        if thread.get("type") != "continue" or set(thread) != {"type", "previous_message_id"}:
            self.fail("a malformed thread: %s" % json.dumps(thread))
            return full, None
        pid = thread["previous_message_id"]
        if pid not in self.held:
            if pid in self.replays:
                # Lost again right after a replay: the client may stop threading.
                self.unthreaded = True
            return None, (404, "thread_not_found", {})
        if pid in self.continued:
            return None, (400, "thread_already_continued", {})
        self.continued.add(pid)
        for k in ("system", "tools"):
            if k in body:
                self.fail("a continue carries %s, which the thread keeps" % k)
        held = self.held[pid]
        msgs = body.get("messages")
        if not isinstance(msgs, list):
            self.fail("a continue without messages")
            msgs = []
        if not msgs and held["stop"] not in ("pause_turn", "compaction"):
            self.fail("a continue with no messages after stop_reason %s" % held["stop"])
        full["messages"] = copy.deepcopy(held["messages"]) + msgs
        for k in ("system", "tools"):
            if k in held:
                full[k] = held[k]
        return full, None

    def hold(self, body, msg_id, content, stop):
        """Keep the thread a reply ends, under its id."""
        if self.threads != "on" or "thread" not in body or msg_id is None:
            return
        msgs = copy.deepcopy(body.get("messages") or [])
        if msgs and msgs[-1].get("role") == "assistant" and isinstance(msgs[-1]["content"], list):
            msgs[-1]["content"] = msgs[-1]["content"] + copy.deepcopy(content)
        else:
            msgs.append({"role": "assistant", "content": copy.deepcopy(content)})
        held = {"messages": msgs, "stop": stop}
        if body["thread"] == {"type": "create"} and self.thread_errors[-1:] == ["thread_not_found"]:
            self.replays.add(msg_id)
        for k in ("system", "tools"):
            if k in body:
                held[k] = body[k]
        self.held[msg_id] = held

    def check_body(self, body):
        if not isinstance(body.get("model"), str) or not body["model"]:
            self.fail("no model")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] <= 0:
            self.fail("max_tokens is %r" % body.get("max_tokens"))
        tools = body.get("tools")
        if not self.search_tool:
            if tools != MEMORY_TOOL:
                self.fail("tools is %s" % json.dumps(tools))
        elif (not isinstance(tools, list) or len(tools) != 2 or tools[0] != MEMORY_TOOL[0]
              or sorted(tools[1]) != ["description", "input_schema", "name"]
              or tools[1]["name"] != "memory_search"
              or "Examples: " not in tools[1]["description"]
              or tools[1]["input_schema"] != SEARCH_SCHEMA):
            self.fail("tools is %s, not memory and memory_search" % json.dumps(tools))
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            self.fail("no messages")
            return
        if msgs[0].get("role") != "user":
            self.fail("the first message is not the user's")
        assistants = []
        for i, m in enumerate(msgs):
            role = m.get("role")
            if role not in ("user", "assistant") or set(m) != {"role", "content"}:
                self.fail("message %d is malformed: %s" % (i, json.dumps(m)[:200]))
                continue
            if i > 0 and msgs[i - 1].get("role") == role:
                self.fail("messages %d and %d are both %s" % (i - 1, i, role))
            content = m["content"]
            if isinstance(content, str):
                continue
            if not isinstance(content, list) or not content or \
                    not all(isinstance(b, dict) and "type" in b for b in content):
                self.fail("message %d has malformed content" % i)
                continue
            if role == "assistant":
                assistants.append(content)
                uses = [b.get("id") for b in content if b["type"] == "tool_use"]
                if not uses:
                    continue
                if i + 1 >= len(msgs):
                    self.fail("message %d has tool_use blocks that no tool_result answers" % i)
                    continue
                nxt = msgs[i + 1]["content"]
                nxt = nxt if isinstance(nxt, list) else []
                got = [b.get("tool_use_id") for b in nxt[:len(uses)]
                       if b.get("type") == "tool_result"]
                if got != uses:
                    self.fail("message %d: tool_use ids %s are answered by %s (tool_results must "
                              "come first, in order)" % (i + 1, uses, got))
        if self.echo_check:
            want = self.echoes[:len(assistants)]
            if assistants != want:
                self.fail("the assistant messages sent back differ from the responses:\n"
                          "  sent     %s\n  expected %s" % (json.dumps(assistants)[:2000],
                                                         json.dumps(want)[:2000]))

    def check_expect(self, exp, body, gap_ms, sent, headers):
        if "sent" in exp:
            bad = subset_mismatch(exp["sent"], sent, "sent")
            if bad:
                self.fail(bad)
        if "sent_messages_count" in exp and len(sent.get("messages") or []) != \
                exp["sent_messages_count"]:
            self.fail("%d messages sent, expected %d" % (len(sent.get("messages") or []),
                                                         exp["sent_messages_count"]))
        for k, v in exp.get("headers", {}).items():
            if headers.get(k) != v:
                self.fail("header %s is %r, expected %r" % (k, headers.get(k), v))
        msgs = body.get("messages") or [{}]
        last = msgs[-1]
        if "messages_count" in exp and len(msgs) != exp["messages_count"]:
            self.fail("%d messages, expected %d" % (len(msgs), exp["messages_count"]))
        if "last_role" in exp and last.get("role") != exp["last_role"]:
            self.fail("the last message is %s's, expected %s's" % (last.get("role"),
                                                                   exp["last_role"]))
        if "last_message" in exp and last != exp["last_message"]:
            self.fail("last message is %s, expected %s" % (json.dumps(last),
                                                           json.dumps(exp["last_message"])))
        if "last_text_contains" in exp:
            # The text the client sent in the last message: a string, or its text blocks.
            content = last.get("content")
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or [] if b.get("type") == "text")
            for want in exp["last_text_contains"]:
                if want not in text:
                    self.fail("the last message's text lacks %r: %r" % (want, text[:2000]))
        if "system_contains" in exp:
            system = body.get("system")
            for want in exp["system_contains"]:
                if not isinstance(system, str) or want not in system:
                    self.fail("the system prompt lacks %r" % want)
        if "tool_results" in exp:
            content = last.get("content") if last.get("role") == "user" else None
            got = [b for b in content if b.get("type") == "tool_result"] \
                if isinstance(content, list) else None
            if got != exp["tool_results"]:
                self.fail("tool_results are\n  %s\nexpected\n  %s" % (
                    json.dumps(got, ensure_ascii=False),
                    json.dumps(exp["tool_results"], ensure_ascii=False)))
        if "body" in exp:
            bad = subset_mismatch(exp["body"], body)
            if bad:
                self.fail(bad)
        if "body_equals_fixture" in exp:
            with open(os.path.join(HERE, "fixtures", exp["body_equals_fixture"])) as f:
                want = json.load(f)
            got = {k: v for k, v in body.items() if k != "stream"}
            if got != want:
                self.fail("body is %s, expected %s" % (json.dumps(got), json.dumps(want)))
        if "min_gap_ms" in exp and (gap_ms is None or gap_ms < exp["min_gap_ms"]):
            self.fail("came %s ms after the last answer, expected at least %d" % (
                gap_ms, exp["min_gap_ms"]))
        if "max_gap_ms" in exp and gap_ms is not None and gap_ms > exp["max_gap_ms"]:
            self.fail("came %d ms after the last answer, expected at most %d" % (
                gap_ms, exp["max_gap_ms"]))

    # ---- answering ----

    def handle(self, req):
        now = time.monotonic()
        length = int(req.headers.get("content-length") or 0)
        raw = req.rfile.read(length)
        headers = {k.lower(): v for k, v in req.headers.items()}
        with self.lock:
            n = self.next
            self.next += 1
            gap_ms = None if self.last_answer_end is None else \
                int((now - self.last_answer_end) * 1000)
            self.requests.append((now, raw))
        if req.path != "/v1/messages":
            self.fail("POST to %s" % req.path)
        try:
            body = json.loads(raw)
        except ValueError:
            self.fail("the body is not JSON")
            body = {}
        if not isinstance(body, dict):
            self.fail("the body is not an object")
            body = {}
        self.check_headers(headers, body)
        sent = body
        if self.threads is not None:
            with self.lock:
                if n < len(self.exchanges) and n not in self.forgotten and \
                        self.exchanges[n].get("forget_threads"):
                    self.forgotten.add(n)
                    self.held.clear()
                full, err = self.thread_view(body)
                if err:
                    # The server's own answer: no exchange is used.
                    self.next -= 1
                    self.thread_errors.append(err[1])
            if err:
                status, code, details = err
                self.send_json(req, status, {"type": "error", "error": dict(
                    type="not_found_error" if status == 404 else "invalid_request_error",
                    message="thread error: " + code, details=dict(details, error_code=code)),
                    "request_id": "req_%03d" % len(self.requests)})
                with self.lock:
                    self.last_answer_end = time.monotonic()
                return
            body = full
        self.check_body(body)
        if n >= len(self.exchanges):
            self.fail("one request more than the %d scripted" % len(self.exchanges))
            self.send_json(req, 400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "unscripted request"}})
            return
        ex = self.exchanges[n]
        self.check_expect(ex.get("expect", {}), body, gap_ms, sent, headers)
        # What only holds over a thread, or only without one.
        self.check_expect(ex.get("expect_thread" if self.threads == "on" and "thread" in sent
                                 else "expect_unthreaded", {}), body, gap_ms, sent, headers)
        r = ex.get("respond", {})
        try:
            self.respond(req, r, body, n, sent)
        except (BrokenPipeError, ConnectionResetError):
            self.client_went_away.set()
        with self.lock:
            self.last_answer_end = time.monotonic()

    def send_json(self, req, status, obj, headers=None, cut=None):
        data = json.dumps(obj).encode()
        req.send_response(status)
        req.send_header("content-type", "application/json")
        req.send_header("content-length", str(len(data)))
        req.send_header("request-id", "req_%03d" % len(self.requests))
        for k, v in (headers or {}).items():
            req.send_header(k, v)
        req.end_headers()
        req.wfile.write(data[:cut] if cut is not None else data)
        req.wfile.flush()
        if cut is not None:
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)

    def respond(self, req, r, body, n, sent):
        if r.get("delay_ms"):
            time.sleep(r["delay_ms"] / 1000)
        if r.get("close"):
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)
            return
        if r.get("hang"):
            # Wait for the client to give up: its side of the socket closes.
            req.connection.settimeout(0.1)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                try:
                    if req.connection.recv(1) == b"":
                        self.client_went_away.set()
                        break
                except socket.timeout:
                    continue
                except OSError:
                    self.client_went_away.set()
                    break
            req.close_connection = True
            return
        status = r.get("status", 200)
        if status != 200:
            err = {"type": "error", "error": r.get("error", {"type": "api_error",
                                                            "message": "Internal error"}),
                   "request_id": "req_%03d" % len(self.requests)}
            self.send_json(req, status, err, r.get("headers"))
            return
        if "sse" in r or "sse_file" in r:
            text = r.get("sse")
            if text is None:
                with open(os.path.join(HERE, "fixtures", r["sse_file"]), newline="") as f:
                    text = f.read()
            if r.get("framing"):
                text = text.replace("\n", r["framing"])
            if r.get("echo", False) is not False:
                self.echoes.append(r["echo"])
            m = re.search(r'"id": *"([^"]+)"', text)
            stop = re.search(r'"stop_reason": *"([^"]+)"', text)
            self.hold(dict(body, thread=sent.get("thread")) if "thread" in sent else {},
                      m.group(1) if m else None, r.get("echo") or [],
                      stop.group(1) if stop else None)
            self.send_stream(req, [text], r)
            return
        msg = full_message(r["message"], n)
        if "thread" in sent:
            self.hold(dict(body, thread=sent["thread"]), msg["id"], msg["content"],
                      msg.get("stop_reason"))
        if r.get("lose_answer"):
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)
            return
        echo = r.get("echo", msg["content"])
        msgs = body.get("messages") or [{}]
        if echo is not False and msgs[-1].get("role") == "assistant" and self.echoes:
            # A continuation (after pause_turn) extends the assistant message.
            self.echoes[-1] = self.echoes[-1] + echo
        elif echo is not False:
            self.echoes.append(echo)
        if not body.get("stream"):
            self.send_json(req, 200, msg, r.get("headers"), cut=r.get("cut_body_at"))
            return
        events = stream_events(msg, r)
        if "cut_after_events" in r:
            events = events[:r["cut_after_events"]]
        self.send_stream(req, encode_events(events, r.get("framing", "\n")), r,
                         cut="cut_after_events" in r)

    def send_stream(self, req, texts, r, cut=False):
        req.send_response(200)
        req.send_header("content-type", "text/event-stream; charset=utf-8")
        req.send_header("cache-control", "no-cache")
        req.send_header("transfer-encoding", "chunked")
        req.send_header("request-id", "req_%03d" % len(self.requests))
        req.end_headers()
        chunk = r.get("chunk", 0)
        gated = False
        for text in texts:
            data = text.encode()
            parts = [data[i:i + chunk] for i in range(0, len(data), chunk)] if chunk else [data]
            for p in parts:
                req.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
                req.wfile.flush()
                if chunk:
                    time.sleep(0.0005)
            if r.get("gate") and not gated and b'"text_delta"' in data:
                # The first piece of text is out: the rest waits until the test
                # has seen it on the terminal, which proves it streamed.
                gated = True
                self.gate_reached.set()
                if not self.gate.wait(10):
                    self.fail("the client did not show the first text delta before the rest")
        if cut:
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)
            return
        req.wfile.write(b"0\r\n\r\n")
        req.wfile.flush()
