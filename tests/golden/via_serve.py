#!/usr/bin/env python3
"""`memtool call` through `memtool serve`, for run.py --via serve.

    via_serve.py MEMTOOL

One JSON line in per call ({"store": [...], "opts": [...], "input": "..."}), one
out ({"exit": 0|1|2, "stdout": "..."}). Each call is one line sent to a serve
process of its own, started with the call's options, so that every call sees
the store as a fresh `memtool call` would. The answer is what `call` prints:
the tool_result block's text for a tool input, the whole block for a tool_use
block; exit 1 when the block says is_error. serve records changes as "serve",
call as "cli": the serve is told to be "cli" unless the case names an actor.
"""
import json
import subprocess
import sys


def answer(memtool, req):
    opts = req["opts"]
    actor = [] if "--actor" in opts else ["--actor", "cli"]
    line = req["input"]
    r = subprocess.run([memtool, *req["store"], *actor, *opts, "serve"],
                       input=line.encode("utf-8") + b"\n", capture_output=True, timeout=60)
    out = r.stdout.decode("utf-8")
    if r.returncode != 0 or not out.endswith("\n") or out.count("\n") != 1:
        return {"exit": 2, "stdout": "",
                "why": f"serve exited {r.returncode} with {out!r} / {r.stderr!r}"}
    block = json.loads(out)
    try:
        sent = json.loads(line)
    except ValueError:
        sent = None
    whole = isinstance(sent, dict) and "type" in sent
    return {"exit": 1 if block["is_error"] else 0,
            "stdout": out[:-1] if whole else block["content"]}


def main():
    memtool = sys.argv[1]
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(memtool, json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
