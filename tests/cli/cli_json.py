#!/usr/bin/env python3
"""The `--json` output of memtool's commands, whatever the command:

    cli_json.py MEMTOOL
        Every command's JSON goes through one checked printer: written to a
        full disk (/dev/full) the command exits 1 and names the failure,
        rather than exiting 0 with nothing written. Bytes that are not UTF-8
        come back as standard base64 (padding included) that decodes to
        exactly what is stored.

Exit 0 when every check passed; otherwise each failure is printed and the
exit status is 1.
"""
import base64
import json
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


def run(memtool, args, stdin=b"", stdout=subprocess.PIPE):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    p = subprocess.run([memtool] + args, input=stdin, stdout=stdout, stderr=subprocess.PIPE,
                       env=e, timeout=120)
    out = p.stdout.decode("utf-8", "replace") if p.stdout is not None else ""
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


def full_disk(memtool, top):
    root = os.path.join(top, "store")
    key = os.path.join(top, "key")
    other = os.path.join(top, "other")
    rc, out, err = run(memtool, ["--root", root, "create", "/memories/a.md"], b"word\n")
    if rc != 0:
        raise SystemExit(f"setting up: create exited {rc}: {err}")
    cases = [
        ("key", ["key", "new", os.path.join(top, "key2"), "--json"]),
        ("init", ["--root", root, "init", "--json"]),
        ("stats", ["--root", root, "stats", "--json"]),
        ("gc", ["--root", root, "gc", "--idle", "30d", "--dry-run", "--json"]),
        ("migrate", ["--root", root, "migrate", "--to", "file:" + other, "--json"]),
        ("rekey", ["--root", os.path.join(top, "sealed"), "--encrypt", "--key-file", key,
                   "rekey", "--status", "--json"]),
        ("rekey", ["--root", os.path.join(top, "sealed"), "--encrypt", "--key-file", key,
                   "rekey", "--status", "--memories", "--json"]),
    ]
    rc, out, err = run(memtool, ["key", "new", key])
    if rc != 0:
        raise SystemExit(f"setting up: key new exited {rc}: {err}")
    rc, out, err = run(memtool, ["--root", os.path.join(top, "sealed"), "--encrypt",
                                 "--key-file", key, "create", "/memories/s.md"], b"sealed\n")
    if rc != 0:
        raise SystemExit(f"setting up: an encrypted create exited {rc}: {err}")
    for name, args in cases:
        with open("/dev/full", "wb") as full:
            rc, out, err = run(memtool, args, stdout=full)
        check(rc == 1 and err.endswith(f"memtool {name}: cannot write the JSON to stdout: "
                                       "No space left on device\n"),
              f"{' '.join(args)} > /dev/full: exit {rc}, {err!r}")


def binary(memtool, top):
    root = os.path.join(top, "bin")
    rc, out, err = run(memtool, ["--root", root, "create", "/memories/a.md"], b"x\n")
    if rc != 0:
        raise SystemExit(f"setting up: create exited {rc}: {err}")
    # Every remainder of the length by three, so each padding is seen.
    for n in range(1, 7):
        data = bytes([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28][:n])
        with open(os.path.join(root, f"b{n}.bin"), "wb") as f:
            f.write(data)
        rc, out, err = run(memtool, ["--root", root, "cat", "--json", f"/memories/b{n}.bin"])
        try:
            got = json.loads(out)
        except ValueError:
            got = {}
        check(rc == 0 and got.get("content", 0) is None and
              got.get("content_base64") == base64.b64encode(data).decode(),
              f"cat --json of {n} bytes not UTF-8: exit {rc}, {out!r} {err!r}")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    memtool = os.path.abspath(sys.argv[1])
    top = tempfile.mkdtemp(prefix="memtool-cli-json-")
    try:
        full_disk(memtool, top)
        binary(memtool, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)


main()
