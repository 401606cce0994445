#!/usr/bin/env python3
"""The command line of memtool's subcommands, alike by construction:

    cli_args.py MEMTOOL
        An option a command does not know is named the same way by every
        command, with its usage lines; a word given to a command that takes
        none is refused as "takes no arguments", with the hint after a colon;
        --opt=V and --opt V are the same.

Exit 0 when every check passed; otherwise each failure is printed and the
exit status is 1.
"""
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what, flush=True)


def run(memtool, args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    p = subprocess.run([memtool] + args, input=b"", capture_output=True, env=e, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


COMMANDS = ["call", "view", "serve", "mcp", "create", "log", "show", "diff", "search", "migrate", "gc", "rekey",
            "key", "init", "stats", "status", "restore", "undo", "redact", "server", "web"]
NO_WORDS = ["call", "migrate", "gc", "rekey", "init", "stats", "status", "serve", "mcp", "server", "web"]


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    memtool = os.path.abspath(sys.argv[1])
    top = tempfile.mkdtemp(prefix="memtool-cli-args-")
    root = ["--root", os.path.join(top, "store")]
    try:
        for cmd in COMMANDS:
            rc, out, err = run(memtool, root + [cmd, "--frob"])
            lines = err.split("\n")
            check(rc == 2 and lines[0] == f"memtool {cmd}: unknown option '--frob'" and
                  lines[1].startswith("usage: memtool "),
                  f"{cmd} --frob: exit {rc}, {err!r}")
        for cmd in NO_WORDS:
            rc, out, err = run(memtool, root + [cmd, "word"])
            check(rc == 2 and err.startswith(f"memtool {cmd}: takes no arguments") and
                  err.count("\n") == 1 and
                  (err == f"memtool {cmd}: takes no arguments\n" or
                   err.startswith(f"memtool {cmd}: takes no arguments: ")),
                  f"{cmd} word: exit {rc}, {err!r}")
        # The two spellings of an option's value read alike.
        for args in (["gc", "--idle=30d", "--dry-run"], ["gc", "--idle", "30d", "--dry-run"]):
            rc, out, err = run(memtool, root + ["create", "/memories/a.md"])
            rc, out, err = run(memtool, root + args)
            check(rc == 0 and out.startswith("0 of 1 memories idle for 30d or more"),
                  f"{' '.join(args)}: exit {rc}, {out!r} {err!r}")
        rc, out, err = run(memtool, root + ["web", "--port=65536"])
        check(rc == 2 and err == "memtool web: --port needs a number from 0 to 65535, not '65536'\n",
              f"web --port=65536: exit {rc}, {err!r}")
        rc, out, err = run(memtool, root + ["gc", "--idle=1x"])
        check(rc == 2 and err.startswith("memtool gc: --idle: '1x' is not a duration"),
              f"gc --idle=1x: exit {rc}, {err!r}")
        # view's one-letter -r is its --range; a range, a count and a colour
        # that do not parse are refused naming the option and what it takes.
        text = os.path.join(top, "b.txt")
        with open(text, "w") as f:
            f.write("one\ntwo\nthree\n")
        run(memtool, root + ["create", "/memories/b.md", text])
        seen = [run(memtool, root + ["view", "/memories/b.md"] + r)[:2]
                for r in (["-r", "2:3"], ["--range", "2:3"], ["--range=2:3"])]
        check(seen[0][0] == 0 and seen.count(seen[0]) == 3 and
              seen[0][1].endswith("     2\ttwo\n     3\tthree\n"),
              f"view -r 2:3 / --range 2:3 / --range=2:3: {seen!r}")
        for args, message in (
                (["view", "/memories/b.md", "-r", "2-3"],
                 "memtool view: --range takes START:END, e.g. 1:20 or 5:-1\n"),
                (["search", "--limit", "0", "two"],
                 "memtool search: --limit needs a number from 1 to 100, not '0'\n"),
                (["search", "--limit=1K", "two"],
                 "memtool search: --limit needs a number from 1 to 100, not '1K'\n"),
                (["search", "--color=red", "two"],
                 "memtool search: --color takes auto, always or never, not 'red'\n")):
            rc, out, err = run(memtool, root + args)
            check(rc == 2 and err == message and out == "", f"{' '.join(args)}: exit {rc}, {err!r}")
        for cmd in ("serve", "mcp"):
            rc, out, err = run(memtool, root + [cmd, "--max-line=lots"])
            check(rc == 2 and err == f"memtool {cmd}: --max-line needs a size in bytes (K, M or G "
                  "after it: 1M), not 'lots'\n", f"{cmd} --max-line=lots: exit {rc}, {err!r}")
        rc, out, err = run(memtool, root + ["search", "two", "--limit", "1", "--color=never"])
        check(rc == 0 and out.startswith("/memories/b.md"), f"search two --limit 1: {rc} {out!r}")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)


main()
