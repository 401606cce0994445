#!/usr/bin/env python3
"""memtool server keys add|list|revoke, as a script and a person use it:

    server_keys.py MEMTOOL

add prints the key alone on stdout (so KEY=$(memtool server keys add T)
works); list and list --json show ids, tenants and access, never a key or
its hash; revoke removes one key and refuses an id it does not know; every
subcommand has --help; bad command lines exit 2. The keys file is made
private (0600), and XDG_CONFIG_HOME is where it goes by default.

Exit 0 when every check passed; otherwise each failure is printed and the
exit status is 1.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what, flush=True)


def run(memtool, args, env):
    p = subprocess.run([memtool, "server", "keys"] + args, input=b"", capture_output=True, env=env,
                       timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: server_keys.py MEMTOOL")
    memtool = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="mt-server-keys-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    env["XDG_CONFIG_HOME"] = os.path.join(tmp, "xdg")
    default = os.path.join(tmp, "xdg", "memtool", "keys")
    other = os.path.join(tmp, "other", "keys")
    try:
        rc, out, err = run(memtool, ["add", "alice"], env)
        check(rc == 0, "add: exit %d (%s)" % (rc, err))
        check(re.fullmatch(r"mtk_[A-Za-z0-9_-]{43}\n", out) is not None,
              "add: stdout is one line, the key: %r" % out)
        key_a = out.strip()
        check("for tenant alice (read-write) added to " + default in err,
              "add: stderr names the id, tenant, access and file: %r" % err)
        check(key_a not in err, "add: the key is not on stderr")
        check(re.search(r"apikey_[0-9a-f]{16}", err) is not None, "add: stderr names the id")
        check(stat.S_IMODE(os.stat(default).st_mode) == 0o600, "add: the file is 0600")

        rc, out, err = run(memtool, ["add", "bob", "--read-only", "--admin"], env)
        check(rc == 0, "add --read-only --admin: exit %d (%s)" % (rc, err))
        key_b = out.strip()
        check("(read-only, admin)" in err, "add --read-only --admin: stderr says so: %r" % err)
        check(key_a != key_b, "two adds, two keys")

        text = open(default, encoding="utf-8").read()
        for k in (key_a, key_b):
            check(k not in text and k[4:] not in text, "the file holds no key")

        rc, out, err = run(memtool, ["list"], env)
        check(rc == 0, "list: exit %d (%s)" % (rc, err))
        lines = out.splitlines()
        check(len(lines) == 2, "list: one line per key: %r" % out)
        check(re.fullmatch(r"apikey_[0-9a-f]{16}\s+alice\s+read-write\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                           lines[0] if lines else "") is not None, "list: alice's line: %r" % out)
        check(re.fullmatch(r"apikey_[0-9a-f]{16}\s+bob\s+read-only, admin\s+\S+Z",
                           lines[1] if len(lines) > 1 else "") is not None, "list: bob's line: %r" % out)
        hashes = re.findall(r"[0-9a-f]{64}", text)
        for shown in (out, err):
            check(key_a not in shown and key_b not in shown, "list shows no key")
            check(not any(h in shown for h in hashes), "list shows no hash")

        rc, out, err = run(memtool, ["list", "--json"], env)
        check(rc == 0, "list --json: exit %d (%s)" % (rc, err))
        try:
            keys = json.loads(out)
        except ValueError:
            keys = []
            check(False, "list --json: not JSON: %r" % out)
        check([sorted(k) for k in keys] == [["admin", "created_at", "id", "read_only", "tenant"]] * 2,
              "list --json: the fields: %r" % out)
        check([(k.get("tenant"), k.get("read_only"), k.get("admin")) for k in keys]
              == [("alice", False, False), ("bob", True, True)], "list --json: the values: %r" % out)
        check(key_a not in out and key_b not in out and not any(h in out for h in hashes),
              "list --json shows no key or hash")

        # revoke: the id goes, the other key stays; an unknown id is an error.
        alice = keys[0]["id"] if keys else "apikey_0000000000000000"
        rc, out, err = run(memtool, ["revoke", alice], env)
        check(rc == 0 and out == "" and "revoked" in err, "revoke: exit %d, %r, %r" % (rc, out, err))
        rc, out, err = run(memtool, ["list", "--json"], env)
        check([k["tenant"] for k in json.loads(out or "[]")] == ["bob"], "revoke: only bob left: %r" % out)
        rc, out, err = run(memtool, ["revoke", alice], env)
        check(rc == 1 and "no key has the id" in err, "revoke again: exit %d, %r" % (rc, err))

        # --keys names another file; the default one is untouched.
        rc, out, err = run(memtool, ["add", "carol", "--keys", other], env)
        check(rc == 0 and re.fullmatch(r"mtk_[A-Za-z0-9_-]{43}\n", out) is not None,
              "add --keys: exit %d, %r" % (rc, err))
        rc, out, err = run(memtool, ["list", "--keys", other], env)
        check("carol" in out and "bob" not in out, "list --keys: that file's keys: %r" % out)

        # A file others may read is refused, naming the fix.
        os.chmod(other, 0o644)
        rc, out, err = run(memtool, ["list", "--keys", other], env)
        check(rc != 0 and "chmod 600" in err, "a 0644 file: exit %d, %r" % (rc, err))
        os.chmod(other, 0o600)

        for sub in ([], ["add"], ["list"], ["revoke"]):
            rc, out, err = run(memtool, sub + ["--help"], env)
            check(rc == 0 and out.startswith("usage: memtool server keys") and err == "",
                  "%s --help: exit %d, %r" % (" ".join(["keys"] + sub), rc, out[:80]))

        for args, what in ((["add"], "add without a tenant"), (["add", "a", "b"], "add with two words"),
                           (["add", "a~b"], "a bad tenant"), (["add", ".memtool"], "a reserved tenant"),
                           (["add", "x", "--bogus"], "an unknown option"), (["frob"], "an unknown subcommand"),
                           ([], "no subcommand"), (["list", "x"], "list with a word"),
                           (["revoke"], "revoke without an id")):
            rc, out, err = run(memtool, args, env)
            check(rc == 2 and out == "" and err.strip() != "", "%s: exit %d, %r, %r" % (what, rc, out, err))

        # Without XDG_CONFIG_HOME: ~/.config/memtool/keys.
        home_env = dict(env, HOME=os.path.join(tmp, "home"))
        del home_env["XDG_CONFIG_HOME"]
        rc, out, err = run(memtool, ["add", "dave"], home_env)
        check(rc == 0 and os.path.exists(os.path.join(tmp, "home", ".config", "memtool", "keys")),
              "HOME's default: exit %d, %r" % (rc, err))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
