#!/usr/bin/env python3
"""A day of use on every store, checking the governance promises by raw bytes.

    day_of_use.py --store file|sqlite|postgresql MEMTOOL

Runs the same day (create, search, str_replace, insert, log, redact, migrate, rekey, gc,
restore, rename, a restore that changes nothing, two undos, search, then a write and a read
without the key) through the `memtool` command on one store kind x {plain, encrypted (key
file)} x {history on, off}: four configurations, each with words of its own. History
commands with history off must fail saying so. After EVERY step it reads every file of the
store (the file store's whole root with .memtool/ and its WAL; the SQLite database with
-wal/-shm and everything beside it; PostgreSQL: the cluster's
data directory, after a CHECKPOINT) and checks:

  (a) encrypted: no word of any memory's content, in any version, anywhere in the bytes;
  (b) no word of a redacted version anywhere, case-folded (a search index keeps words
      lower-cased);
  (c) no no-op versions: a restore onto identical content leaves the number of versions
      as it was, a rekey leaves it as it was (a re-encryption is no change of content),
      and an undo that records a version changes the content;
  (d) `log --json` newest first (ids decreasing, times non-increasing), and each version
      keeps its time, operation and actor across a migrate and a rekey.

Every failure names the invariant, the configuration, the step and, for bytes, the file
and offset where they were found. All failures are listed, then the exit status is 1.

PostgreSQL (run inside scripts/with-pg.sh; the schema is made with scripts/pg-prepare.sh):
each configuration is a tenant of its own in the throwaway cluster. (a) looks at the whole
data directory, WAL included: plaintext of an encrypted memory must never reach the
server. (b) looks at the database's own files (base/<oid>/) after a CHECKPOINT: a redacted
row lives on as a dead tuple until the server vacuums, and the WAL keeps it until its
segments are recycled. So (b) is checked after `memtool store vacuum` (the project's own
step for it, which redact's help names), run by the tables' owner as an operator would.

Python 3 standard library only.
"""
import argparse
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

FAR_FUTURE = "2099-01-01T00:00:00Z"


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    env.update(extra)
    return env


class Day:
    def __init__(self, memtool, kind, encrypt, history, base, pg):
        self.memtool = memtool
        self.kind = kind
        self.encrypt = encrypt
        self.history = history
        self.base = base  # the configuration's scratch directory: stores, keys
        self.pg = pg  # {url, admin, psql, data, oid} for postgresql
        self.name = "%s/%s/history-%s" % (kind, "encrypted" if encrypt else "plain",
                                          "on" if history else "off")
        self.rng = random.Random(self.name)
        self.failures = []
        self.seen = set()  # (invariant, needle, file): each reported once
        self.step = "setup"
        self.written = {}  # needle -> where it was written (a)
        self.redacted = {}  # needle -> the redacted version (b)
        self.times = {}  # version id -> (created_at, operation, actor) (d)
        os.makedirs(os.path.join(base, "stores"))
        os.makedirs(os.path.join(base, "keys"))
        self.key = None
        if encrypt:
            self.key = self.new_key("key1")
        self.store = self.store_for("one")

    # ---- the store and the command ----

    def store_for(self, label):
        if self.kind == "file":
            return ["--root", os.path.join(self.base, "stores", label)]
        if self.kind == "sqlite":
            d = os.path.join(self.base, "stores", label)
            os.makedirs(d, exist_ok=True)
            return ["--store", "sqlite:" + os.path.join(d, "memories.db")]
        tenant = "m-%s-%s" % (self.name.replace("/", "-"), label)
        return ["--store", self.pg["url"], "--tenant", tenant]

    def url_of(self, sargs):
        if sargs[0] == "--root":
            return "file:" + sargs[1]
        return sargs[1]

    def new_key(self, label):
        path = os.path.join(self.base, "keys", label)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
        os.close(fd)
        return path

    def opts(self):
        o = list(self.store)
        if self.key:
            o += ["--encrypt", "--key-file", self.key]
        if not self.history:
            o += ["--history", "off"]
        return o

    def run(self, *words, stdin=b"", expect=0, opts=None):
        """memtool with the store's options; a status other than `expect` is a failure."""
        argv = [self.memtool, *(self.opts() if opts is None else opts), *words]
        r = subprocess.run(argv, input=stdin, capture_output=True, timeout=120,
                           env=clean_env())
        if expect is not None and r.returncode != expect:
            self.fail("command", "`memtool %s` exited %d, expected %d; stderr: %s" % (
                " ".join(words), r.returncode, expect, r.stderr.decode(errors="replace")[:400]),
                key=("command", words, r.stderr[:100]))
        return r

    def fail(self, invariant, message, key=None):
        if key is not None:
            if key in self.seen:
                return
            self.seen.add(key)
        self.failures.append("[%s] %s, step %r: %s" % (invariant, self.name, self.step, message))

    # ---- words ----

    def word(self, where):
        """A word of its own: mixed case, so a case-folded copy is a different byte
        sequence. It is looked for without its first three letters: an index that
        shares a prefix between neighbouring terms keeps only the rest."""
        w = self.rng.choice(string.ascii_uppercase) + "".join(
            self.rng.choice(string.ascii_lowercase) for _ in range(5)) + "".join(
            self.rng.choice(string.ascii_uppercase + string.ascii_lowercase) for _ in range(6))
        if self.encrypt:
            self.written[w] = where
        return w

    @staticmethod
    def needle(word):
        return word.lower()[3:].encode()

    # ---- the bytes ----

    def files(self, whole):
        """(path, bytes) of every file the store wrote: for PostgreSQL the whole data
        directory (whole) or the database's own files."""
        if self.kind == "postgresql":
            self.psql("CHECKPOINT")
            top = self.pg["data"] if whole else os.path.join(self.pg["data"], "base",
                                                             self.pg["oid"])
        else:
            top = os.path.join(self.base, "stores")
        for d, _, names in os.walk(top):
            for n in names:
                p = os.path.join(d, n)
                try:
                    with open(p, "rb") as f:
                        yield p, f.read()
                except (FileNotFoundError, IsADirectoryError):
                    continue  # a temporary file gone since the walk saw it

    def psql(self, sql):
        subprocess.run([self.pg["psql"], "-q", "-X", "-v", "ON_ERROR_STOP=1", self.pg["admin"],
                        "-c", sql], check=True, capture_output=True, timeout=120)

    def check_bytes(self):
        wants = []
        if self.encrypt:
            wants += [("a", "plaintext of an encrypted memory (%s)" % where, w, True)
                      for w, where in self.written.items()]
        if self.redacted:
            if self.kind == "postgresql":
                # Dead tuples stay until the owner runs memtool's vacuum (see the docstring).
                self.run("store", "vacuum", "postgresql:" + self.pg["admin"], opts=[])
            wants += [("b", "a word of redacted version %d" % v, w, False)
                      for w, v in self.redacted.items()]
        if not wants:
            return
        for whole in ([True, False] if self.kind == "postgresql" else [True]):
            batch = [x for x in wants if x[3] == whole or self.kind != "postgresql"]
            if not batch:
                continue
            for path, data in self.files(whole):
                low = data.lower()
                for inv, what, w, _ in batch:
                    at = low.find(self.needle(w))
                    if at >= 0:
                        rel = os.path.relpath(path, self.pg["data"] if self.kind == "postgresql"
                                              else self.base)
                        self.fail(inv, "%s: %r (case-folded) found in %s at offset %d" % (
                            what, w, rel, at - 3 if at >= 3 else at), key=(inv, w, rel))

    def log(self):
        r = self.run("log", "--json", "--limit", "0")
        return [json.loads(line) for line in r.stdout.decode().splitlines() if line.strip()]

    def check_log(self):
        if not self.history:
            return
        log = self.log()
        for newer, older in zip(log, log[1:]):
            if not (newer["id"] > older["id"] and newer["created_at"] >= older["created_at"]):
                self.fail("d", "log is not newest-first: version %d (%s) is listed before "
                          "version %d (%s)" % (newer["id"], newer["created_at"], older["id"],
                                               older["created_at"]),
                          key=("d-order", newer["id"], older["id"]))
        for v in log:
            had = self.times.setdefault(v["id"], (v["created_at"], v["operation"], v["actor"]))
            now = (v["created_at"], v["operation"], v["actor"])
            if had != now:
                self.fail("d", "version %d was %s, is now %s" % (v["id"], had, now),
                          key=("d-time", v["id"]))
        return log

    def check(self):
        self.check_bytes()
        self.check_log()

    def count(self):
        return len(self.log()) if self.history else 0

    def cat(self, path, expect=0):
        return self.run("cat", path, expect=expect).stdout

    def no_op(self, what, *words):
        """(c): a change that leaves the content as it was adds no version."""
        before, content = self.count(), self.cat(words[-1] if words[0] == "undo" else
                                                 "/memories/notes2.md")
        self.run(*words)
        after = self.count()
        if after != before:
            self.fail("c", "%s added %d version(s)" % (what, after - before))
        return content

    def history_off(self, *words):
        r = self.run(*words, expect=None)
        if r.returncode == 0 or b"history is off" not in r.stderr:
            self.fail("history-off", "`memtool %s` with history off: exit %d, stderr %r; "
                      "expected a failure saying history is off" % (
                          " ".join(words), r.returncode, r.stderr[:200]))

    def newest(self, path, op=None):
        for v in self.log():
            if v["path"] == path and (op is None or v["operation"] == op):
                return v
        return None

    # ---- the day ----

    def day(self):
        w = {k: self.word("word %s" % k) for k in "ABCDE"}
        notes = "# Notes\nThe %s plan.\nKeep %s in mind.\n" % (w["A"], w["B"])
        steps = []

        def step(f):
            steps.append(f)
            return f

        @step
        def create():
            self.run("create", "/memories/notes.md", "-", stdin=notes.encode())
            self.run("create", "/memories/attic/old.md", "-",
                     stdin=("Old %s\n" % w["C"]).encode())

        @step
        def search_first():
            r = self.run("search", w["A"])
            if b"/memories/notes.md" not in r.stdout:
                self.fail("search", "search for %r did not find /memories/notes.md: %r" % (
                    w["A"], r.stdout[:300]))

        @step
        def str_replace():
            self.run("str-replace", "/memories/notes.md", w["A"], w["D"])

        @step
        def insert():
            self.run("insert", "/memories/notes.md", "3", "Added %s" % w["E"])

        @step
        def search_again():
            r = self.run("search", w["D"])
            if b"/memories/notes.md" not in r.stdout:
                self.fail("search", "search for %r did not find /memories/notes.md" % w["D"])

        @step
        def log():
            if not self.history:
                return self.history_off("log")
            n = sum(1 for v in self.log() if v["path"] == "/memories/notes.md")
            if n != 3:
                self.fail("log", "/memories/notes.md has %d versions in the log, expected 3" % n)

        @step
        def redact():
            # Version 1 of notes.md is the only one holding word A.
            if not self.history:
                return self.history_off("redact", "1")
            mine = [v for v in self.log() if v["path"] == "/memories/notes.md"]
            if not mine:
                return self.fail("log", "no version of /memories/notes.md to redact")
            first = mine[-1]
            if self.kind == "postgresql" and b"store vacuum" not in self.run(
                    "redact", "--help", opts=[]).stdout:
                self.fail("docs", "redact --help does not name memtool store vacuum")
            self.run("redact", str(first["id"]))
            self.redacted[w["A"]] = first["id"]

        @step
        def migrate():
            before = self.log() if self.history else []
            to = self.store_for("two")
            self.run("migrate", "--to", self.url_of(to),
                     *(["--to-tenant", to[3]] if len(to) > 2 else []), "--json")
            self.store = to
            if self.history:
                after = self.log()
                key = lambda v: (v["created_at"], v["operation"], v["actor"], v["path"],  # noqa
                                 v["redacted"])
                if [key(v) for v in after] != [key(v) for v in before]:
                    self.fail("d", "migrate changed the versions: before %s; after %s" % (
                        [key(v)[:3] + (v["id"],) for v in before],
                        [key(v)[:3] + (v["id"],) for v in after]))
                self.times = {}  # ids may change in a migrate; the new ones from here

        @step
        def rekey():
            if not self.encrypt:
                return
            # (a), (b) and (d) are checked after it as after every step; (c): a
            # re-encryption changes no memory's content, so it adds no version.
            k2 = os.path.join(self.base, "keys", "key2")
            self.run("key", "new", k2, opts=[])
            before = self.count() if self.history else 0
            self.run("rekey", "--new-key-file", k2)
            self.key = k2
            if self.history and self.count() != before:
                self.fail("c", "a rekey added %d version(s)" % (self.count() - before))

        @step
        def gc():
            self.run("gc", "--idle", "1d", "--path", "/memories/attic", "--now", FAR_FUTURE)
            self.cat("/memories/attic/old.md", expect=1)

        @step
        def restore_deleted():
            if not self.history:
                return self.history_off("restore", "1")
            v = self.newest("/memories/attic/old.md", "created")
            if v is None:
                return self.fail("log", "no created version of /memories/attic/old.md")
            self.run("restore", str(v["id"]))
            if self.cat("/memories/attic/old.md") != ("Old %s\n" % w["C"]).encode():
                self.fail("restore", "/memories/attic/old.md is not back as it was")

        @step
        def rename():
            self.run("rename", "/memories/notes.md", "/memories/notes2.md")

        @step
        def restore_same():
            if not self.history:
                return
            v = self.newest("/memories/notes2.md")
            was = self.no_op("a restore of the current version", "restore", str(v["id"]))
            if self.cat("/memories/notes2.md") != was:
                self.fail("restore", "a restore of the current version changed the content")

        @step
        def undo_same():
            # The newest versions (the rename's, the restore's) hold the current content:
            # an undo passes over them to the content before, a change; a second undo
            # brings back what the first replaced. Neither may record a version that
            # leaves the content as it was (c).
            path = "/memories/notes2.md"
            if not self.history:
                return self.history_off("undo", path)
            was, n0 = self.cat(path), self.count()
            self.run("undo", path)
            first, n1 = self.cat(path), self.count()
            if first == was:
                self.fail("c" if n1 != n0 else "undo",
                          "an undo added %d version(s) and left the content as it was"
                          % (n1 - n0))
            self.run("undo", path)
            second, n2 = self.cat(path), self.count()
            if second == first and n2 != n1:
                self.fail("c", "a second undo added a version that left the content as it was")
            if second != was:
                self.fail("undo", "a second undo did not bring back what the first replaced")

        @step
        def search_last():
            r = self.run("search", w["E"])
            if b"/memories/notes2.md" not in r.stdout:
                self.fail("search", "search for %r did not find /memories/notes2.md" % w["E"])
            r = self.run("search", w["A"], expect=None)
            if w["A"].encode() in r.stdout or w["A"].lower().encode() in r.stdout.lower():
                self.fail("b", "search shows the redacted word %r" % w["A"])

        @step
        def without_key():
            # Last, as it may break the store for the key too. An encrypted store opened without its key refuses, and writes no plaintext
            # (the word is one (a) looks for from here on).
            if not self.encrypt:
                return
            bare = [o for o in self.opts() if o not in ("--encrypt", "--key-file", self.key)]
            r = self.run("create", "/memories/nokey.md", "-", opts=bare, expect=None,
                         stdin=("Typed without the key %s\n" % self.word("without the key")).encode())
            if r.returncode == 0:
                self.fail("a", "create without the key succeeded on an encrypted store")
                # Taken away again (by the same means), so that the rest of the day tests
                # the rest; any copy left behind is still looked for.
                self.run("delete", "/memories/nokey.md", opts=bare, expect=None)
            r = self.run("cat", "/memories/notes2.md", opts=bare, expect=None)
            if r.returncode == 0:
                self.fail("a", "cat without the key exited 0 on an encrypted store, printing "
                          "%d bytes" % len(r.stdout))

        for f in steps:
            self.step = f.__name__
            try:
                f()
            except subprocess.TimeoutExpired as e:
                self.fail("command", "timed out: %s" % e)
            self.check()
        return self.failures


def one(args):
    memtool, kind, encrypt, history, base, pg = args
    try:
        return Day(memtool, kind, encrypt, history, base, pg).day()
    except Exception as e:  # a crash of the harness is a failure too, with its cause
        import traceback
        return ["[harness] %s/%s/%s: %s" % (kind, encrypt, history,
                                             traceback.format_exc(limit=3) or e)]


def pg_setup(memtool):
    for var in ("MEMTOOL_TEST_PG", "MEMTOOL_TEST_PG_ADMIN", "MEMTOOL_TEST_PG_DIR",
                "MEMTOOL_TEST_PG_BIN"):
        if not os.environ.get(var):
            raise SystemExit("day_of_use.py: --store postgresql runs inside scripts/with-pg.sh "
                             "(%s is not set)" % var)
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["sh", os.path.join(here, "..", "..", "scripts", "pg-prepare.sh"), memtool],
                   check=True)
    psql = os.path.join(os.environ["MEMTOOL_TEST_PG_BIN"], "psql")
    admin = os.environ["MEMTOOL_TEST_PG_ADMIN"]
    oid = subprocess.run([psql, "-qAtX", admin, "-c",
                          "SELECT oid FROM pg_database WHERE datname = current_database()"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return {"url": os.environ["MEMTOOL_TEST_PG"], "admin": admin, "psql": psql, "oid": oid,
            "data": os.path.join(os.environ["MEMTOOL_TEST_PG_DIR"], "data")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=("file", "sqlite", "postgresql"), required=True)
    ap.add_argument("memtool")
    a = ap.parse_args()
    memtool = os.path.abspath(a.memtool)
    pg = pg_setup(memtool) if a.store == "postgresql" else None
    top = tempfile.mkdtemp(prefix="memtool-day-")
    try:
        configs = []
        for encrypt in (False, True):
            for history in (True, False):
                base = os.path.join(top, "%s-%s" % ("enc" if encrypt else "plain",
                                                    "hist" if history else "nohist"))
                configs.append((memtool, a.store, encrypt, history, base, pg))
        if a.store == "postgresql":
            # One after another: a vacuum of one would hold up the others' writes.
            results = [one(c) for c in configs]
        else:
            with ProcessPoolExecutor(max_workers=4) as ex:
                results = list(ex.map(one, configs))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    failures = [f for r in results for f in r]
    for f in failures:
        print(f)
    print("%d configuration(s) of %s, %d failure(s)" % (len(configs), a.store, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
