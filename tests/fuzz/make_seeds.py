#!/usr/bin/env python3
"""Write the seed corpora of the input, dispatch, serve, mcp and sse fuzz targets.

Seeds are small, well-formed examples of each input kind, so the fuzzers start
from inputs that reach deep code instead of being refused by the JSON parser.
Every hostile path in corpus/path/ is also tried as the path of each command.
Run from anywhere; it rewrites corpus/{input,dispatch,serve,mcp,sse}/.
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def out(kind, items):
    d = os.path.join(HERE, "corpus", kind)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, data in enumerate(items):
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        with open(os.path.join(d, "seed_%03d" % i), "wb") as f:
            f.write(data)


def j(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def lines(*objs):
    return "\n".join(o if isinstance(o, str) else j(o) for o in objs)


hostile = []
pdir = os.path.join(HERE, "corpus", "path")
for name in sorted(os.listdir(pdir)):
    with open(os.path.join(pdir, name), "rb") as f:
        hostile.append(f.read())

V = lambda p, **kw: dict(command="view", path=p, **kw)
C = lambda p, t: dict(command="create", path=p, file_text=t)
S = lambda p, o, n=None: dict(command="str_replace", path=p, old_str=o, **({} if n is None else {"new_str": n}))
I = lambda p, line, t: dict(command="insert", path=p, insert_line=line, insert_text=t)
D = lambda p: dict(command="delete", path=p)
R = lambda a, b: dict(command="rename", old_path=a, new_path=b)

calls = [
    lines(V("/memories")),
    lines(V("/memories/notes")),
    lines(V("/memories/notes/a.md")),
    lines(V("/memories/notes/a.md", view_range=[2, -1])),
    lines(V("/memories/notes/a.md", view_range=[9, 12])),
    lines(C("/memories/new.md", "hello\nworld\n"), V("/memories/new.md")),
    lines(C("/memories/x/y/z.md", ""), V("/memories"), D("/memories/x")),
    lines(S("/memories/notes/a.md", "beta", "BETA"), V("/memories/notes/a.md")),
    lines(S("/memories/notes/a.md", "a")),
    lines(S("/memories/notes/a.md", "gamma\n")),
    lines(I("/memories/notes/a.md", 0, "first\n"), I("/memories/notes/a.md", 4, "last")),
    lines(I("/memories/notes/a.md", 99, "x")),
    lines(D("/memories/notes/a.md"), V("/memories/notes")),
    lines(D("/memories/notes")),
    lines(D("/memories/")),
    lines(R("/memories/notes/a.md", "/memories/b/c.md"), V("/memories")),
    lines(R("/memories/notes", "/memories/notes/sub/x")),
    lines(R("/memories/notes", "/memories/other")),
    lines(R("/memories/link", "/memories/moved")),
    lines(V("/memories/link"), V("/memories/link/canary.txt"), V("/memories/abs/canary.txt")),
    lines(V("/memories/notes/up.md"), S("/memories/notes/up.md", "C", "D")),
    lines(V("/memories/hl.md"), S("/memories/hl.md", "C", "x"), I("/memories/hl.md", 0, "x")),
    lines(V("/memories/fifo"), S("/memories/fifo", "a", "b"), D("/memories/fifo")),
    lines(C("/memories/link/evil.md", "x"), C("/memories/abs/dir/evil.md", "x")),
    lines(R("/memories/notes/a.md", "/memories/link/a.md"), D("/memories/link/canary.txt")),
    lines(C("/memories/.mt-tmp.1/f", "x"), V("/memories")),
    lines(C("/memories/node_modules/m.js", "x"), V("/memories")),
    lines(C("/memories/big.md", "line\n" * 600), V("/memories/big.md")),
    lines(C("/memories/u.md", "caf\u00e9 \u7b14\u8bb0 \U0001F600\n\u00ff"), V("/memories/u.md")),
    lines(C("/memories/bad.md", "a\u0000b\r\nc"), V("/memories/bad.md")),
    lines({"command": "nope"}),
    lines({"path": "/memories"}),
    lines({"command": "view", "path": 5}),
    lines({"command": "view", "path": "/memories", "view_range": [1]}),
    lines({"command": "insert", "path": "/memories/notes/a.md", "insert_line": "1", "insert_text": "x"}),
    lines({"command": "str_replace", "path": "/memories/notes/a.md", "old_str": ""}),
    lines({"type": "tool_use", "id": "toolu_1", "name": "memory", "input": V("/memories")}),
    "[1,2]",
    "{\"command\":\"view\",\"command\":\"delete\",\"path\":\"/memories\"}",
    "{\"command\":\"view\",\"path\":\"/memories/\\u0000\"}",
    "not json",
]
for h in hostile:
    try:
        p = h.decode("utf-8")
    except UnicodeDecodeError:
        p = h.decode("latin-1")
    calls.append(lines(V(p)))
    calls.append(lines(C(p, "x")))
    calls.append(lines(R("/memories/notes/a.md", p)))
out("dispatch", calls)

# One JSON text each, for the flat reader against jansson: every value kind,
# every escape, surrogate pairs, and the shapes it must hand to jansson.
out("input", [
    '{"command":"view","path":"/memories/a.md"}',
    ' {\t"command" : "view" ,\n"path":"/memories","view_range":[ 1 , -1 ]}\r\n',
    '{"command":"create","path":"/memories/x","file_text":"a\\n\\t\\"\\\\\\/\\b\\f\\r\\u00e9\\u0000\\ud83d\\ude00z"}',
    '{"command":"insert","path":"/memories/x","insert_line":0,"insert_text":"é中😀"}',
    '{"command":"insert","path":"/memories/x","insert_line":-0,"insert_text":null}',
    '{"command":"str_replace","path":"/p","old_str":"a","new_str":true,"x":false,"y":null}',
    '{"type":"tool_use","id":"t","name":"memory","command":"view"}',
    '{"command":"view","command":"view"}',
    '{"command":"view","path":"/memories","view_range":[1,2,3]}',
    '{"command":"view","view_range":[1.5,2],"n":1e3}',
    '{"command":"rename","old_path":"/memories/a","new_path":"/memories/b","extra":{"a":[1]}}',
    '{"a\\u0062":1}',
    '{"command":"view","path":"\\ud800"}',
    '{"command":"view","path":"\\udc00\\ud800x"}',
    '{"insert_line":123456789012345678}',
    '{"insert_line":1234567890123456789}',
    '{"insert_line":012}',
    '{}',
    '{"command":"view"} x',
    b'{"command":"\xc0\xaf"}',
    b'{"path":"\xed\xa0\x80"}',
])

serve = [c for c in calls[:20]]
serve += [
    lines({"type": "tool_use", "id": "toolu_1", "name": "memory", "input": V("/memories")}),
    lines({"type": "tool_use", "id": 7, "name": "other", "input": {}}),
    lines({"type": "text", "text": "hi"}),
    "\n  \n" + lines(V("/memories")),
    "[]\n\"x\"\n3\nnull",
    "{\"command\":",
]
out("serve", serve)

init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "fuzz", "version": "1"}}}
inited = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(i, args, name="memory"):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": name, "arguments": args}}


modern_meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}
mcp = [
    lines(init, inited, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    lines(init, inited, call(2, V("/memories")), call(3, C("/memories/m.md", "x")),
          call(4, V("/memories/m.md", view_range=[1, 1]))),
    lines(init, call(2, S("/memories/notes/a.md", "beta", "B")), call(3, D("/memories/notes"))),
    lines(init, call(2, V("/memories"), name="memory_view"), call(3, {"command": "bogus"})),
    lines({"jsonrpc": "2.0", "id": "a", "method": "server/discover", "params": {"_meta": modern_meta}},
          {"jsonrpc": "2.0", "id": "b", "method": "tools/call",
           "params": {"_meta": modern_meta, "name": "memory", "arguments": V("/memories/link/canary.txt")}}),
    lines({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 1, "result": {}}),
    lines({"jsonrpc": "1.0", "id": 1, "method": "ping"}, {"id": [1], "method": "x"}, "[1]", "{"),
    lines(call(1, V("/memories"))),
    lines(init, {"jsonrpc": "2.0", "id": 9, "method": "unknown/method", "params": []}),
]
out("mcp", mcp)


def sse(*events):
    s = ""
    for name, data in events:
        if name:
            s += "event: %s\n" % name
        for line in (data if isinstance(data, str) else j(data)).split("\n"):
            s += "data: %s\n" % line
        s += "\n"
    return s


msg = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                             "content": [], "model": "m", "stop_reason": None,
                                             "usage": {"input_tokens": 1, "output_tokens": 0}}}
stream = sse(("message_start", msg),
             ("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}),
             ("ping", {"type": "ping"}),
             ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": "Hi \u00e9"}}),
             ("content_block_stop", {"type": "content_block_stop", "index": 0}),
             ("content_block_start", {"type": "content_block_start", "index": 1,
                                      "content_block": {"type": "tool_use", "id": "toolu_1",
                                                        "name": "memory", "input": {}}}),
             ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                      "delta": {"type": "input_json_delta", "partial_json": "{\"command\":"}}),
             ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                      "delta": {"type": "input_json_delta", "partial_json": "\"view\"}"}}),
             ("content_block_stop", {"type": "content_block_stop", "index": 1}),
             ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                "usage": {"output_tokens": 5}}),
             ("message_stop", {"type": "message_stop"}))
thinking = sse(("message_start", msg),
               ("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "thinking", "thinking": ""}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "signature_delta", "signature": "abc"}}),
               ("content_block_start", {"type": "content_block_start", "index": 1,
                                        "content_block": {"type": "server_tool_use", "id": "s"}}))
err = sse(("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
seeds = [b"\x00\x01" + stream.encode(), b"\x12\x34" + stream.replace("\n", "\r\n").encode(),
         b"\xff\xfe" + stream.replace("\n", "\r").encode(), b"\x00\x07" + thinking.encode(),
         b"\x01\x01" + err.encode(),
         b"\x02\x02\xef\xbb\xbf: comment\nretry: 10\nid: 5\ndata\ndata:x\n\nevent:a\ndata:  y\r\n\r",
         b"\x03\x03" + sse((None, msg)).encode(),
         b"\x04\x04" + sse(("content_block_delta", {"type": "content_block_delta", "index": 3,
                                                    "delta": {"type": "text_delta", "text": "x"}})).encode()]
out("sse", seeds)
