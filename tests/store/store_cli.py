#!/usr/bin/env python3
"""How `memtool` treats the store itself, on each store:

    store_cli.py MEMTOOL readonly file|sqlite
        A store on a read-only mount: view, cat, log, show, diff, stats,
        status and search work (search says once on stderr that its index
        was not saved); every write fails with "the store is read-only".
        The same on an encrypted store (--encrypt --key-file), and on an
        SQLite database copied without its -wal and -shm files.
        As root the mount is a real read-only bind mount, made in a mount
        namespace of its own (unshare -m), so it goes whatever way the test
        ends; as another user the store is made unwritable with chmod. If
        neither makes the store unwritable the test fails: it never passes
        without having run.
    store_cli.py MEMTOOL missing file|sqlite|postgresql
        A reading command (migrate's source, rekey --status and gc --dry-run
        among them) on a store that does not exist (file, sqlite), or
        for a tenant the store does not have (every store), is an error
        naming it, and nothing is created; a write still creates them.
        postgresql needs MEMTOOL_TEST_PG (scripts/with-pg.sh sets it).
    store_cli.py MEMTOOL modes file|sqlite
        Under umask 022 every file memtool makes in a store is 0600 and
        every directory 0700 (the history database and its -wal/-shm
        included); ones an older memtool left looser are made 0600 at open.

Exit 0 when every check passed; otherwise each failure is printed and the
exit status is 1.
"""
import fcntl
import os
import shutil
import stat
import subprocess
import sys
import tempfile

READS = ["view", "cat", "log", "show", "diff", "search", "stats", "status", "secrets", "migrate",
         "rekey", "gc"]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what, flush=True)


def run(memtool, args, stdin=b"", env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    e.update(env or {})
    p = subprocess.run([memtool] + args, input=stdin, capture_output=True, env=e, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def store_opts(kind, where, key=None):
    crypt = ["--encrypt", "--key-file", key] if key else []
    if kind == "file":
        return ["--root", os.path.join(where, "store")] + crypt
    if kind == "sqlite":
        return ["--store", "sqlite:" + os.path.join(where, "memories.db")] + crypt
    return ["--store", os.environ["MEMTOOL_TEST_PG"]] + crypt


def tree(path):
    """Every path beneath path with its mode and bytes (None for a directory)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            data = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    data = f.read()
            out[os.path.relpath(p, path)] = (stat.S_IMODE(st.st_mode), data)
    return out


# ---- read-only ---------------------------------------------------------------

def fill(memtool, opts):
    """A store with a project, a memory in two versions, and one the search
    index has not seen (so the read-only search must index it)."""
    steps = [
        (["init", "--name", "demo"], b""),
        (["create", "/memories/a.md"], b"hello world\n"),
        (["str-replace", "/memories/a.md", "hello", "bye"], b""),
        (["search", "world"], b""),
        (["create", "/memories/b.md"], b"other thing\n"),
    ]
    for args, stdin in steps:
        rc, out, err = run(memtool, opts + args, stdin)
        if rc != 0:
            raise SystemExit(f"setting up: memtool {' '.join(args)} exited {rc}: {err}")


def read_only_checks(memtool, kind, where, key=None):
    opts = store_opts(kind.split()[0], where, key)
    if key:
        kind += " encrypted"
    if kind == "file":
        # The history is copied and its log loaded under a shared lock: while
        # a writer holds the store's lock, a read of the history waits, and
        # goes on once the writer is done.
        fd = os.open(os.path.join(where, "store", ".memtool", "state"), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            e = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
            p = subprocess.Popen([memtool] + opts + ["log"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=e)
            try:
                p.wait(timeout=0.5)
                check(False, f"{kind}: log on a read-only store read the history while a "
                      f"writer held the store's lock (exit {p.returncode})")
            except subprocess.TimeoutExpired:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
            out, err = p.communicate(timeout=60)
            check(p.returncode == 0 and out.decode().count("\n") == 6,
                  f"{kind}: log on a read-only store once the writer is done: "
                  f"exit {p.returncode}, {out!r} {err!r}")
        finally:
            os.close(fd)
    # The versions: 1-3 init, 4 a.md created, 5 a.md modified, 6 b.md created.
    rc, out, err = run(memtool, opts + ["view", "/memories"])
    check(rc == 0 and "/memories/a.md" in out and "/memories/b.md" in out,
          f"{kind}: view /memories on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["view", "/memories/a.md"])
    check(rc == 0 and "1\tbye world" in out,
          f"{kind}: view a file on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["cat", "/memories/a.md"])
    check(rc == 0 and out == "bye world\n",
          f"{kind}: cat on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["log"])
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 6 and lines[0].startswith("6 ") and "/memories/b.md" in lines[0]
          and "modified" in lines[1] and lines[5].startswith("1 "),
          f"{kind}: log on a read-only store (6 versions, newest first): exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["show", "4"])
    check(rc == 0 and out == "hello world\n",
          f"{kind}: show on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["diff", "5"])
    check(rc == 0 and "-hello world" in out and "+bye world" in out,
          f"{kind}: diff on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["stats"])
    check(rc == 0 and out.startswith("files        5 of") and "versions     6 kept" in out,
          f"{kind}: stats on a read-only store: exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["status"])
    check(rc == 0 and "project       demo" in out,
          f"{kind}: status on a read-only store: exit {rc}, {out!r} {err!r}")
    # b.md came after the index was last brought up to date: found all the same.
    rc, out, err = run(memtool, opts + ["search", "thing"])
    check(rc == 0 and "/memories/b.md" in out and err.count("read-only") == 1,
          f"{kind}: search on a read-only store (found, said once): exit {rc}, {out!r} {err!r}")
    rc, out, err = run(memtool, opts + ["search", "world"])
    check(rc == 0 and "/memories/a.md" in out and "/memories/b.md" not in out,
          f"{kind}: search on a read-only store: exit {rc}, {out!r} {err!r}")
    writes = [
        (["create", "/memories/c.md"], b"new\n"),
        (["str-replace", "/memories/a.md", "bye", "hi"], b""),
        (["insert", "/memories/a.md", "0", "top"], b""),
        (["delete", "/memories/b.md"], b""),
        (["rename", "/memories/b.md", "/memories/d.md"], b""),
        (["restore", "4"], b""),
        (["redact", "4"], b""),
    ]
    for args, stdin in writes:
        rc, out, err = run(memtool, opts + args, stdin)
        check(rc == 1 and "the store is read-only" in err,
              f"{kind}: {args[0]} on a read-only store must fail saying so: exit {rc}, "
              f"{out!r} {err!r}")


def readonly(memtool, kind):
    if len(sys.argv) > 4 and sys.argv[4] == "--inside":
        src, ro, key = sys.argv[5], sys.argv[6], sys.argv[7]
        subprocess.run(["mount", "--bind", src, ro], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", ro], check=True)
        probe = os.path.join(ro, "probe")
        try:
            open(probe, "w").close()
            raise SystemExit("the bind mount is not read-only: the test cannot run")
        except OSError as e:
            if e.errno != 30:  # EROFS
                raise
        read_only_checks(memtool, kind, os.path.join(ro, "plain"))
        read_only_checks(memtool, kind, os.path.join(ro, "crypt"), key)
        if kind == "sqlite":
            read_only_checks(memtool, kind + " without -wal/-shm", os.path.join(ro, "bare"))
        return
    top = tempfile.mkdtemp(prefix="memtool-ro-")
    try:
        src, ro = os.path.join(top, "src"), os.path.join(top, "ro")
        key = os.path.join(top, "key")
        os.mkdir(src, 0o700)
        os.mkdir(ro, 0o700)
        os.mkdir(os.path.join(src, "plain"), 0o700)
        os.mkdir(os.path.join(src, "crypt"), 0o700)
        rc, out, err = run(memtool, ["key", "new", key])
        if rc != 0:
            raise SystemExit(f"setting up: memtool key new exited {rc}: {err}")
        fill(memtool, store_opts(kind, os.path.join(src, "plain")))
        fill(memtool, store_opts(kind, os.path.join(src, "crypt"), key))
        if kind == "sqlite":
            # The database alone, as copied without its -wal and -shm (its log
            # is empty once the last connection closed).
            os.mkdir(os.path.join(src, "bare"), 0o700)
            shutil.copy(os.path.join(src, "plain", "memories.db"), os.path.join(src, "bare"))
        before = tree(src)
        if os.geteuid() == 0:
            # Its own mount namespace: the mount goes when the child does.
            p = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                                os.path.abspath(__file__), memtool, "readonly", kind,
                                "--inside", src, ro, key])
            check(p.returncode == 0, f"{kind}: the read-only mount's checks (exit {p.returncode})")
        else:
            for dirpath, dirnames, filenames in os.walk(src):
                for name in filenames + dirnames:
                    os.chmod(os.path.join(dirpath, name), 0o500 if name in dirnames else 0o400)
            os.chmod(src, 0o500)
            try:
                open(os.path.join(src, "probe"), "w").close()
                raise SystemExit("chmod did not make the store unwritable: the test cannot run")
            except PermissionError:
                pass
            read_only_checks(memtool, kind, os.path.join(src, "plain"))
            read_only_checks(memtool, kind, os.path.join(src, "crypt"), key)
            # The modes as they were (directories first, so that all can be reached).
            os.chmod(src, 0o700)
            for dirpath, dirnames, filenames in os.walk(src):
                for name in dirnames:
                    os.chmod(os.path.join(dirpath, name), 0o700)
            for rel, (mode, data) in before.items():
                os.chmod(os.path.join(src, rel), mode)
        after = tree(src)
        check(before == after, f"{kind}: the read-only store changed: "
              f"{sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))!r}")
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---- missing stores and tenants ---------------------------------------------

def read_args(cmd, aside):
    """The command line of a reading command; aside is a directory outside the
    store for what one needs besides it (a key, a migration's target)."""
    return {"view": ["view", "/memories"], "cat": ["cat", "/memories/a.md"], "log": ["log"],
            "show": ["show", "1"], "diff": ["diff", "1"], "search": ["search", "word"],
            "stats": ["stats"], "status": ["status"], "secrets": ["secrets", "scan"],
            "migrate": ["migrate", "--to", "file:" + os.path.join(aside, "to")],
            "rekey": ["--encrypt", "--key-file", os.path.join(aside, "key"), "rekey", "--status"],
            "gc": ["gc", "--idle", "30d", "--dry-run"]}[cmd]


def who(cmd):
    """How an error of cmd begins: migrate names itself, as it opens two stores."""
    return "memtool migrate: " if cmd == "migrate" else "memtool: "


def missing(memtool, kind):
    top = tempfile.mkdtemp(prefix="memtool-missing-")
    aside = tempfile.mkdtemp(prefix="memtool-aside-")
    try:
        rc, out, err = run(memtool, ["key", "new", os.path.join(aside, "key")])
        if rc != 0:
            raise SystemExit(f"setting up: memtool key new exited {rc}: {err}")
        opts = store_opts(kind, top)
        if kind != "postgresql":
            target = opts[1].split(":", 1)[1] if kind == "sqlite" else opts[1]
            for cmd in READS:
                rc, out, err = run(memtool, opts + read_args(cmd, aside))
                check(rc == 2 and err == f"{who(cmd)}no store at {target}: check --root/--store, "
                      "or create it with a write\n",
                      f"{kind}: {cmd} on a missing store: exit {rc}, {out!r} {err!r}")
                check(os.listdir(top) == [], f"{kind}: {cmd} on a missing store made "
                      f"{os.listdir(top)!r}")
            # The default root: XDG_DATA_HOME/memtool/memories, named.
            rc, out, err = run(memtool, ["view", "/memories"], env={"XDG_DATA_HOME": top})
            check(rc == 2 and f"no store at {top}/memtool/memories:" in err,
                  f"view of the default root on a fresh machine: exit {rc}, {out!r} {err!r}")
            check(os.listdir(top) == [], "a view of the default root made a store")
        # A write makes the store (default tenant); reads of it then work.
        rc, out, err = run(memtool, opts + ["create", "/memories/a.md"], b"word\n")
        check(rc == 0, f"{kind}: create on a missing store: exit {rc}, {err!r}")
        rc, out, err = run(memtool, opts + ["cat", "/memories/a.md"])
        check(rc == 0 and out == "word\n", f"{kind}: cat after the first write: {rc} {err!r}")
        before = tree(top)
        for cmd in READS:
            rc, out, err = run(memtool, opts + ["--tenant", "nobody"] + read_args(cmd, aside))
            check(rc == 2 and err == f"{who(cmd)}no tenant 'nobody' in the store: check --tenant "
                  "(a tenant is made by its first write)\n",
                  f"{kind}: {cmd} for a missing tenant: exit {rc}, {out!r} {err!r}")
        check(tree(top) == before, f"{kind}: a read for a missing tenant changed the store")
        # ... and the tenant is still missing (nothing was made for it).
        rc, out, err = run(memtool, opts + ["--tenant", "nobody", "stats"])
        check(rc == 2 and "no tenant 'nobody'" in err,
              f"{kind}: the missing tenant was made by a read: exit {rc}, {out!r} {err!r}")
        rc, out, err = run(memtool, opts + ["--tenant", "nobody", "create", "/memories/n.md"],
                           b"mine\n")
        check(rc == 0, f"{kind}: a write for a new tenant: exit {rc}, {err!r}")
        rc, out, err = run(memtool, opts + ["--tenant", "nobody", "cat", "/memories/n.md"])
        check(rc == 0 and out == "mine\n", f"{kind}: a read of the tenant made by a write: {err!r}")
        check(sorted(os.listdir(aside)) == ["key"],
              f"{kind}: a migration from a missing store made {os.listdir(aside)!r}")
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(aside, ignore_errors=True)


# ---- modes -------------------------------------------------------------------

def modes(memtool, kind):
    top = tempfile.mkdtemp(prefix="memtool-modes-")
    old = os.umask(0o022)
    try:
        opts = store_opts(kind, top)
        steps = [
            (["create", "/memories/dir/a.md"], b"hello world\n"),
            (["str-replace", "/memories/dir/a.md", "hello", "bye"], b""),
            (["search", "world"], b""),
            (["log"], b""),
            (["--tenant", "t1", "create", "/memories/b.md"], b"x\n"),
            (["--tenant", "t1", "search", "x"], b""),
            (["--tenant", "t1", "log"], b""),
        ]
        for args, stdin in steps:
            rc, out, err = run(memtool, opts + args, stdin)
            check(rc == 0, f"{kind}: memtool {' '.join(args)}: exit {rc}, {err!r}")
        made = tree(top)
        names = sorted(made)
        if kind == "file":
            for want in ["store/.memtool/history.db", "store/.memtool/history.db-wal",
                         "store/.memtool/history.db-shm", "store/.memtool/state",
                         "store/.memtool/tenants/t1/.memtool/history.db"]:
                check(want in made, f"{kind}: expected {want} among {names!r}")
        else:
            for want in ["memories.db", "memories.db-wal", "memories.db-shm"]:
                check(want in made, f"{kind}: expected {want} among {names!r}")
        for rel, (mode, data) in made.items():
            want = 0o700 if data is None else 0o600
            check(mode == want, f"{kind}: {rel} is {mode:o}, not {want:o}")
        # Files an older memtool made with the umask's modes are made private at open.
        loose = [r for r in made if made[r][1] is not None and
                 (".memtool/history.db" in r or r.startswith("memories.db"))]
        for rel in loose:
            os.chmod(os.path.join(top, rel), 0o644)
        rc, out, err = run(memtool, opts + ["log"])
        check(rc == 0, f"{kind}: log after loosening: exit {rc}, {err!r}")
        if kind == "file":
            rc, out, err = run(memtool, opts + ["--tenant", "t1", "log"])
        for rel in loose:
            mode = stat.S_IMODE(os.lstat(os.path.join(top, rel)).st_mode)
            check(mode == 0o600, f"{kind}: {rel} left {mode:o} after an open, not 600")
    finally:
        os.umask(old)
        shutil.rmtree(top, ignore_errors=True)


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    memtool, what, kind = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    if kind == "postgresql":
        if not os.environ.get("MEMTOOL_TEST_PG") or not os.environ.get("MEMTOOL_TEST_PG_OWNER"):
            raise SystemExit("store_cli.py: postgresql needs MEMTOOL_TEST_PG and "
                             "MEMTOOL_TEST_PG_OWNER (scripts/with-pg.sh sets them)")
        # The schema, made as an operator would (scripts/pg-prepare.sh).
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["sh", os.path.join(here, "..", "..", "scripts", "pg-prepare.sh"), memtool],
                       check=True)
    {"readonly": readonly, "missing": missing, "modes": modes}[what](memtool, kind)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
