#!/usr/bin/env python3
"""Run golden test files against `memtool call`.

A .test file is a script of steps, each starting at the beginning of a line:

    # a comment
    @ --view-limit 300          options for the memtool calls that follow
    $ mkdir -p a && ln -s /etc a/link
                                a shell command run in the store root; it must exit 0
                                ($MEMTOOL is the memtool under test, $OUTSIDE a
                                directory beside the store)
    > {"command": "view", ...}  a call that must succeed (exit 0)
    ! {"command": "view", ...}  a call that must fail as a tool error (exit 1)
    ? not json                  a call that must be refused as usage (exit 2)
    = a/b.txt "content\\n"       the file's exact bytes, as a JSON string
    ~ log /memories/a.md        a memtool subcommand (shell-split) that must succeed:
                                its stdout is the expected output; `~!` one that must
                                fail as a tool error (exit 1) and `~?` as usage (exit 2):
                                their stderr is the expected output (or a `%` line).
                                Leading NAME=VALUE words set environment variables, as
                                in sh (`~ MEMTOOL_ACTOR=bot delete /memories/a.md`);
                                stdin is empty. In these blocks
                                {TIME} matches an RFC 3339 time with milliseconds and
                                {MEM} a memory id.

The lines after a call, up to the next step, are its exact expected output
(a result never ends with a newline, so the block's last newline is not part of
it). A call followed by a `%` line instead gives the expected output as one
JSON string, for results holding control characters.

Each file runs in a fresh, empty store, and no MEMTOOL_* variable of the
caller's environment reaches the memtool under test.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

STEP = ("# ", "@ ", "$ ", "> ", "! ", "? ", "= ", "% ", "~ ", "~!", "~?")
EXIT = {">": 0, "!": 1, "?": 2}
CLI_EXIT = {"~ ": 0, "~!": 1, "~?": 2}
ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
WILD = {b"{TIME}": rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", b"{MEM}": rb"mem_[0-9a-f]{16}"}


def matches(expected, got):
    """Whether got is expected with its wildcards filled in."""
    pattern = re.escape(expected)
    for token, rx in WILD.items():
        pattern = pattern.replace(re.escape(token), rx)
    return re.fullmatch(pattern, got, re.S) is not None


def parse(path):
    steps = []
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        text = line.decode("utf-8")
        if text == "" or text == "#" or text.startswith("# "):
            continue
        kind = text[:2]
        if kind not in STEP:
            raise SystemExit(f"{path}:{i}: not a step: {text!r}")
        arg = line[2:]
        if kind in CLI_EXIT:
            block = []
            start = i + 1
            if i < len(lines) and lines[i].startswith(b"% "):
                steps.append((kind, arg.strip(),
                              json.loads(lines[i][2:].decode("utf-8")).encode("utf-8"), start - 1))
                i += 1
                continue
            while i < len(lines) and lines[i].decode("utf-8")[:2] not in STEP:
                block.append(lines[i])
                i += 1
            while block and block[-1] == b"":
                block.pop()
            steps.append((kind, arg.strip(), b"\n".join(block), start - 1))
        elif kind[0] in EXIT:
            block = []
            start = i + 1
            if i < len(lines) and lines[i].startswith(b"% "):
                expected = json.loads(lines[i][2:].decode("utf-8")).encode("utf-8")
                i += 1
            else:
                while i < len(lines) and lines[i].decode("utf-8")[:2] not in STEP:
                    block.append(lines[i])
                    i += 1
                while block and block[-1] == b"":
                    block.pop()
                expected = b"\n".join(block)
            steps.append((kind[0], arg, expected, start - 1))
        else:
            steps.append((kind[0], arg, None, i))
    return steps


def clean_env(**extra):
    """The caller's environment without MEMTOOL_* (an exported MEMTOOL_ACTOR
    or limit would change the results), plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    env.update(extra)
    return env


def cli_command(arg):
    """A `~` step's words: leading NAME=VALUE ones are its environment."""
    words, extra = shlex.split(arg), {}
    while words and ENV_WORD.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        extra[name] = value
    return words, extra


def run_file(memtool, path):
    failures = []
    root = tempfile.mkdtemp(prefix="memtool-golden-")
    store = os.path.join(root, "store")
    os.mkdir(store, 0o700)
    opts = []
    try:
        for kind, arg, expected, line in parse(path):
            where = f"{os.path.basename(path)}:{line}"
            if kind in CLI_EXIT:
                words, extra = cli_command(arg.decode())
                r = subprocess.run([memtool, "--root", store, *opts, *words],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                                   env=clean_env(**extra))
                got = (r.stdout if kind == "~ " else r.stderr).rstrip(b"\n")
                if r.returncode != CLI_EXIT[kind]:
                    failures.append(f"{where}: exit {r.returncode}, expected {CLI_EXIT[kind]}"
                                    f"\n  command: {arg!r}\n  stdout: {r.stdout!r}"
                                    f"\n  stderr: {r.stderr!r}")
                elif not matches(expected, got):
                    failures.append(f"{where}: wrong output\n  command:  {arg!r}"
                                    f"\n  expected: {expected!r}\n  got:      {got!r}")
            elif kind == "@":
                opts = arg.decode().split()
            elif kind == "$":
                r = subprocess.run(["sh", "-c", arg.decode()], cwd=store,
                                   env=clean_env(OUTSIDE=os.path.join(root, "outside"),
                                                 MEMTOOL=os.path.abspath(memtool)))
                if r.returncode != 0:
                    failures.append(f"{where}: shell step failed ({r.returncode}): {arg.decode()}")
            elif kind == "=":
                rel, want = arg.decode().split(" \"", 1)
                want = "\"" + want
                want = json.loads(want).encode("utf-8")
                try:
                    with open(os.path.join(store, rel), "rb") as f:
                        got = f.read()
                except OSError as e:
                    got = f"<{e.strerror}>".encode()
                if got != want:
                    failures.append(f"{where}: {rel} holds {got!r}, expected {want!r}")
            else:
                r = subprocess.run([memtool, "--root", store, *opts, "call"], input=arg,
                                   capture_output=True, timeout=60, env=clean_env())
                if r.returncode != EXIT[kind]:
                    failures.append(f"{where}: exit {r.returncode}, expected {EXIT[kind]}"
                                    f"\n  input:  {arg!r}\n  stdout: {r.stdout!r}"
                                    f"\n  stderr: {r.stderr!r}")
                elif kind != "?" and r.stdout != expected:
                    failures.append(f"{where}: wrong output\n  input:    {arg!r}"
                                    f"\n  expected: {expected!r}\n  got:      {r.stdout!r}")
                elif kind == "?" and (r.stdout != b"" or not r.stderr.startswith(b"memtool")):
                    failures.append(f"{where}: a usage error prints nothing on stdout and says "
                                    f"why on stderr; got {r.stdout!r} / {r.stderr!r}")
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", root])
        shutil.rmtree(root, ignore_errors=True)
    return failures


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: run.py MEMTOOL FILE.test...")
    memtool, files = sys.argv[1], sys.argv[2:]
    failed = 0
    for path in files:
        failures = run_file(memtool, path)
        for f in failures:
            print(f"FAIL {f}")
        failed += bool(failures)
    print(f"{len(files) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
