#!/usr/bin/env python3
"""Run golden test files against `memtool call`, on any store.

    run.py [--store file|sqlite|postgresql|remote] [--via python|NAME] [--encrypt] MEMTOOL FILE.test...

Every case runs on every store with the same expected output, byte for byte:
file (a directory), sqlite (a database file) or postgresql (the server named
by $MEMTOOL_TEST_PG, each case in a tenant of its own; without the variable
the run fails, it is not skipped), or remote (a memory store of `memtool
server`, started on loopback by the run, reached over HTTP: src/remote). A
remote store differs from a local one where docs/remote-store.md says, and
only the steps that meet a difference are marked, each with why (below);
every other step of every case runs there and is compared byte for byte.

A .test file is a script of steps, each starting at the beginning of a line:

    # a comment
    #! stores: file             the first line of a case that only the file store can run
                                (it makes symbolic links, FIFOs, or edits files by hand)
    #! not remote: REASON       the next step is not run on a remote store (REASON: the
                                difference of docs/remote-store.md it meets)
    #! remote differs: REASON   the next call or `~` step runs on a remote store and its
                                exit status is checked, but not its output
    #! not remote begin: REASON ... #! not remote end
                                no step between the two lines runs on a remote store
    @ --view-limit 300          options for the memtool calls that follow
    + a/b.txt "x\n" * 3         a file put in the store through memtool create: its exact
                                content, a Python expression giving text or bytes
    - a/b.txt                   nothing is at that path
    / a/b                       a directory is at that path
    | printf '...' | $MEMTOOL $STORE serve
                                a shell command on every store, run beside the store (in
                                a scratch directory); it must exit 0
                                ($STORE holds the options that name the store,
                                $STORE_URL and $STORE_TENANT the same as a URL and a
                                tenant, "" for none)
    $ mkdir -p a && ln -s /etc a/link
                                a shell command in the file store's root, run on the
                                file store only: it sets up (in a `#! stores: file` case)
                                or checks what only a directory has (modes, links,
                                temporary files); it must exit 0 ($MEMTOOL is the
                                memtool under test, $OUTSIDE a directory beside the store)
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
                                {TIME} matches an RFC 3339 time with milliseconds,
                                {MEM} a memory id and {DUR} an idle time ("3d 4h").

The lines after a call, up to the next step, are its exact expected output
(a result never ends with a newline, so the block's last newline is not part of
it; an output line that would begin like a step needs the `%` form below). A call followed by a `%` line instead gives the expected output as one
JSON string, for results holding control characters.

Each file runs in a fresh, empty store, and no MEMTOOL_* variable of the
caller's environment reaches the memtool under test.

--via python runs every `>` and `!` call through the Python binding
(bindings/python) in this process instead of `memtool call` (via_python.py:
MemtoolMemoryTool.call, or Memory.tool_result for a tool_use block, with the
`@` options as mt_options; libmemtool from MEMTOOL_LIBRARY), with the same
expected output. `?` calls stay on the command: they test `memtool call`'s own
argument and input checks (bad options, input that is not one JSON object),
which the binding replaces with Python exceptions. The other steps (`+ - / =
~ | $`) set up and check the store with the command, as without --via.

--encrypt runs every case on an encrypted store (a fresh key file, and
--encrypt --key-file on every memtool call, $STORE included), with the same
expected output. `=` then reads through `memtool cat`, as on the SQL stores. A
case that puts or inspects memory files' raw bytes on disk (an encrypted
store holds them sealed) says so on its first or second line and is not run
encrypted:

    #! plain: REASON            why the case needs a store without encryption

--via NAME (any other name) makes every `>` and `!` call through a language binding instead of
`memtool call`: one long-lived shim process, the command in $MEMTOOL_VIA_<NAME>,
reads a JSON line {"store": [...options naming the store], "opts": [...the `@`
options], "input": "the call's text"} and answers {"exit": 0|1|2, "stdout": "..."},
as `memtool call` would exit and print. The other steps stay as they are.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

STEP = ("# ", "#!", "@ ", "$ ", "| ", "+ ", "- ", "/ ", "> ", "! ", "? ", "= ", "% ", "~ ", "~!",
        "~?")
STORES = ("file", "sqlite", "postgresql", "remote")

NOT_REMOTE = "#! not remote: "
NOT_REMOTE_BEGIN = "#! not remote begin: "
NOT_REMOTE_END = "#! not remote end"
DIFFERS = "#! remote differs: "
SKIPPED = []  # (case:line, why, ran) of the steps a remote run left out or did not compare
EXIT = {">": 0, "!": 1, "?": 2}
CLI_EXIT = {"~ ": 0, "~!": 1, "~?": 2}
ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
WILD = {b"{TIME}": rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", b"{MEM}": rb"mem_[0-9a-f]{16}",
        b"{DUR}": rb"\d+[dhms]( \d+[hms])?"}


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
    # Why the next step (or each step of an open block) is not run on a
    # remote store; None where it is.
    skip_next = skip_block = None
    while i < len(lines):
        line = lines[i]
        i += 1
        text = line.decode("utf-8")
        if text.startswith("#! plain: ") and i <= 2:
            continue
        if text.startswith(NOT_REMOTE_BEGIN):
            if skip_block is not None:
                raise SystemExit(f"{path}:{i}: a '#! not remote begin' block is already open")
            skip_block = text[len(NOT_REMOTE_BEGIN):].strip()
            continue
        if text == NOT_REMOTE_END:
            if skip_block is None:
                raise SystemExit(f"{path}:{i}: '#! not remote end' without a begin")
            skip_block = None
            continue
        if text.startswith(NOT_REMOTE):
            skip_next = text[len(NOT_REMOTE):].strip()
            continue
        if text.startswith(DIFFERS):
            skip_next = ("differs", text[len(DIFFERS):].strip())
            continue
        if text.startswith("#!"):
            if i != 1 or not text.startswith("#! stores: "):
                raise SystemExit(f"{path}:{i}: '#! stores: ...' is the first line or nothing")
            steps.append(("#!", text[len("#! stores: "):].split(), None, i, None))
            continue
        if text == "" or text == "#" or text.startswith("# "):
            continue
        kind = text[:2]
        if kind not in STEP:
            raise SystemExit(f"{path}:{i}: not a step: {text!r}")
        arg = line[2:]
        why, skip_next = skip_next or skip_block, None
        if why == "" or why == ("differs", ""):
            raise SystemExit(f"{path}:{i}: a '#! not remote' marker says why")
        if isinstance(why, tuple) and kind[0] not in EXIT and kind not in CLI_EXIT:
            raise SystemExit(f"{path}:{i}: '#! remote differs' is for a call or a `~` step")
        if kind in CLI_EXIT:
            block = []
            start = i + 1
            if i < len(lines) and lines[i].startswith(b"% "):
                steps.append((kind, arg.strip(),
                              json.loads(lines[i][2:].decode("utf-8")).encode("utf-8"), start - 1,
                              why))
                i += 1
                continue
            while i < len(lines) and lines[i].decode("utf-8")[:2] not in STEP:
                block.append(lines[i])
                i += 1
            while block and block[-1] == b"":
                block.pop()
            steps.append((kind, arg.strip(), b"\n".join(block), start - 1, why))
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
            steps.append((kind[0], arg, expected, start - 1, why))
        else:
            steps.append((kind[0], arg, None, i, why))
    if skip_next is not None or skip_block is not None:
        raise SystemExit(f"{path}: a '#! not remote' marker with no step after it")
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


def stores_of(path):
    """The stores a case is for: all, or those its first line names."""
    with open(path, "rb") as f:
        first = f.readline().decode("utf-8")
    if first.startswith("#! stores: "):
        return first[len("#! stores: "):].split()
    return list(STORES)


PG_READY = []


def prepare_pg(memtool):
    """Once per run: the schema made as an operator would (scripts/pg-prepare.sh)."""
    # A cluster shared by the run's cases (scripts/pg-shared.sh) was prepared once.
    if PG_READY or os.environ.get("MEMTOOL_TEST_PG_PREPARED") == "1":
        return
    if not os.environ.get("MEMTOOL_TEST_PG_OWNER"):
        raise SystemExit("run.py: --store postgresql needs MEMTOOL_TEST_PG_OWNER too "
                         "(scripts/with-pg.sh sets it)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "pg-prepare.sh")
    # The owner's and memtool's URLs reach the script: not clean_env's MEMTOOL_* cut.
    subprocess.run(["sh", script, memtool], check=True)
    PG_READY.append(True)


def plain_only(path):
    """Why a case cannot run encrypted ('#! plain: ...'), or None."""
    with open(path, "rb") as f:
        for line in f.read().split(b"\n")[:2]:
            if line.startswith(b"#! plain: "):
                return line[len(b"#! plain: "):].decode("utf-8")
    return None


def crypt_args(root):
    """A fresh key (mode 0600, as memtool requires) and the options that use it."""
    key = os.path.join(root, "key")
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32).hex().encode() + b"\n")
    os.close(fd)
    return ["--encrypt", "--key-file", key]


REMOTE = {}


def remote_store(memtool):
    """A new, empty memory store of one `memtool server` started for the run
    (on loopback, with a key of its own in ANTHROPIC_API_KEY, which
    clean_env keeps): its URL."""
    import atexit
    import signal
    import urllib.request
    if not REMOTE:
        tmp = tempfile.mkdtemp(prefix="memtool-golden-remote-")
        keys = os.path.join(tmp, "keys")
        key = subprocess.run([memtool, "server", "keys", "add", "golden", "--keys", keys],
                             capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
        # --secrets off: the server keeps what it is sent, as the hosted API does,
        # so the secrets policy that applies is the calling memtool's own.
        srv = subprocess.Popen([memtool, "--secrets", "off", "--store",
                                "sqlite:" + os.path.join(tmp, "s.db"), "server",
                                "--listen", "127.0.0.1:0", "--keys", keys],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=clean_env())
        REMOTE["base"] = srv.stdout.readline().strip()
        REMOTE["key"] = key
        os.environ["ANTHROPIC_API_KEY"] = key

        def stop():
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=20)
            shutil.rmtree(tmp, ignore_errors=True)
        atexit.register(stop)
    req = urllib.request.Request(REMOTE["base"] + "/v1/memory_stores", method="POST",
                                 data=b'{"name":"golden"}',
                                 headers={"Authorization": "Bearer " + REMOTE["key"],
                                          "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        sid = json.load(r)["id"]
    return REMOTE["base"] + "/v1/memory_stores/" + sid


def store_args(memtool, kind, root, store, case, encrypt=False):
    """The options that name the store a case runs in."""
    if encrypt:
        return store_args(memtool, kind, root, store, case) + crypt_args(root)
    if kind == "file":
        return ["--root", store]
    if kind == "sqlite":
        return ["--store", "sqlite:" + os.path.join(root, "memories.db")]
    if kind == "remote":
        return ["--store", remote_store(memtool)]
    url = os.environ.get("MEMTOOL_TEST_PG")
    if not url:
        raise SystemExit("run.py: --store postgresql needs MEMTOOL_TEST_PG, the URL of a test "
                         "server (scripts/pg-cluster.sh starts one)")
    prepare_pg(memtool)
    # A tenant of its own is a fresh, empty store in the shared server.
    tenant = "golden-%s-%d-%s" % (os.path.basename(case).split(".")[0], os.getpid(),
                                  os.path.basename(root)[-8:])
    return ["--store", url, "--tenant", tenant]


def store_url(sargs):
    """The store under test as a URL and a tenant, for commands that name a
    second store (migrate): STORE_URL, and STORE_TENANT ("" for none)."""
    url = sargs[1] if sargs[0] == "--store" else "file:" + sargs[1]
    tenant = sargs[3] if len(sargs) > 3 and sargs[2] == "--tenant" else ""
    return {"STORE_URL": url, "STORE_TENANT": tenant}


def content_of(memtool, kind, sargs, store, rel):
    """A file's exact bytes: read from disk in the file store (not through
    memtool, which is what is under test), with memtool cat in the others
    and on an encrypted store."""
    if kind == "file" and "--encrypt" not in sargs:
        try:
            with open(os.path.join(store, rel), "rb") as f:
                return f.read()
        except OSError as e:
            return f"<{e.strerror}>".encode()
    r = subprocess.run([memtool, *sargs, "cat", "/memories/" + rel], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60, env=clean_env())
    if r.returncode != 0:
        return b"<" + r.stderr.strip() + b">"
    return r.stdout


def what_is(memtool, kind, sargs, store, rel):
    """'file', 'dir' or 'none' at a store path."""
    if kind == "file":
        p = os.path.join(store, rel)
        if os.path.islink(p) or not os.path.lexists(p):
            return "none" if not os.path.lexists(p) else "link"
        return "dir" if os.path.isdir(p) else "file"
    r = subprocess.run([memtool, *sargs, "cat", "/memories/" + rel], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60, env=clean_env())
    if r.returncode == 0:
        return "file"
    if b"is a directory" in r.stderr:
        return "dir"
    if b"does not exist" in r.stderr:
        return "none"
    return "error: " + r.stderr.decode("utf-8", "replace").strip()


VIA = {}  # NAME: the shim process of --via NAME, started at its first call


def via_call(via, sargs, opts, data):
    """A `>`/`!` call through the binding's shim: (exit status, stdout)."""
    if via not in VIA:
        cmd = shlex.split(os.environ.get("MEMTOOL_VIA_" + via.upper(), ""))
        if not cmd:
            raise SystemExit(f"run.py: --via {via} needs MEMTOOL_VIA_{via.upper()}, the shim's command")
        VIA[via] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    env=clean_env())
    shim = VIA[via]
    shim.stdin.write(json.dumps({"store": sargs, "opts": opts,
                                 "input": data.decode("utf-8")}).encode() + b"\n")
    shim.stdin.flush()
    line = shim.stdout.readline()
    if not line:
        raise SystemExit(f"run.py: the {via} shim exited ({shim.wait()})")
    reply = json.loads(line)
    return reply["exit"], reply["stdout"].encode("utf-8")


def run_file(memtool, path, kind="file", via="cli", encrypt=False):
    failures = []
    root = tempfile.mkdtemp(prefix="memtool-golden-")
    store = os.path.join(root, "store")
    os.mkdir(store, 0o700)
    opts = []
    if kind not in stores_of(path):
        return [f"{os.path.basename(path)}: a case for {' '.join(stores_of(path))} only, "
                f"run on {kind}"]
    if encrypt and plain_only(path):
        return [f"{os.path.basename(path)}: a case for a plain store only "
                f"({plain_only(path)}), run encrypted"]
    sargs = store_args(memtool, kind, root, store, path, encrypt)
    binding = None
    if via == "python":
        import via_python
        binding = via_python.Caller(sargs)
    try:
        for kind_, arg, expected, line, why in parse(path):
            where = f"{os.path.basename(path)}:{line}"
            step = kind_
            if step == "#!":
                continue
            # Compared on a remote store: all of the step, its exit status
            # only (#! remote differs), or none of it (#! not remote).
            compare = why is None or kind != "remote"
            if not compare:
                SKIPPED.append((where, why[1] if isinstance(why, tuple) else why,
                                isinstance(why, tuple)))
                if not isinstance(why, tuple):
                    continue
            if step in CLI_EXIT:
                words, extra = cli_command(arg.decode())
                r = subprocess.run([memtool, *sargs, *opts, *words],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                                   env=clean_env(**extra))
                got = (r.stdout if step == "~ " else r.stderr).rstrip(b"\n")
                if r.returncode != CLI_EXIT[step]:
                    failures.append(f"{where}: exit {r.returncode}, expected {CLI_EXIT[step]}"
                                    f"\n  command: {arg!r}\n  stdout: {r.stdout!r}"
                                    f"\n  stderr: {r.stderr!r}")
                elif compare and not matches(expected, got):
                    failures.append(f"{where}: wrong output\n  command:  {arg!r}"
                                    f"\n  expected: {expected!r}\n  got:      {got!r}")
            elif step == "@":
                opts = arg.decode().split()
            elif step == "$" and kind != "file":
                continue
            elif step in ("$", "|"):
                # A portable step runs beside the store, not in it: what it
                # writes (out files) must not become a memory.
                # Encrypted, every memtool the step runs has the key (a second
                # store it makes is encrypted too).
                key = {"MEMTOOL_KEY_FILE": sargs[-1]} if encrypt else {}
                r = subprocess.run(["sh", "-c", arg.decode()], cwd=store if step == "$" else root,
                                   env=clean_env(OUTSIDE=os.path.join(root, "outside"), **key,
                                                 MEMTOOL=os.path.abspath(memtool),
                                                 STORE=" ".join(shlex.quote(a) for a in sargs),
                                                 **store_url(sargs)))
                if r.returncode != 0:
                    failures.append(f"{where}: shell step failed ({r.returncode}): {arg.decode()}")
            elif step == "+":
                rel, expr = arg.decode().split(" ", 1)
                data = eval(expr, {"__builtins__": {}})  # the case file's own literal
                if isinstance(data, str):
                    data = data.encode("utf-8")
                r = subprocess.run([memtool, *sargs, "create", "/memories/" + rel, "-"],
                                   input=data, capture_output=True, timeout=60, env=clean_env())
                if r.returncode != 0:
                    failures.append(f"{where}: could not put {rel}: {r.stderr!r}")
            elif step in ("-", "/"):
                rel = arg.decode().strip()
                got = what_is(memtool, kind, sargs, store, rel)
                want = "none" if step == "-" else "dir"
                if got != want:
                    failures.append(f"{where}: {rel} is {got}, expected {want}")
            elif step == "=":
                rel, want = arg.decode().split(" \"", 1)
                want = "\"" + want
                want = json.loads(want).encode("utf-8")
                got = content_of(memtool, kind, sargs, store, rel)
                if got != want:
                    failures.append(f"{where}: {rel} holds {got!r}, expected {want!r}")
            elif binding is not None and step != "?":
                try:
                    status, out = binding.call(opts, arg)
                except via_python.Unsupported as e:
                    failures.append(f"{where}: cannot go through the binding: {e}")
                    continue
                if status != EXIT[step]:
                    failures.append(f"{where}: is_error {bool(status)}, expected "
                                    f"{bool(EXIT[step])}\n  input:  {arg!r}\n  result: {out!r}")
                elif compare and out != expected:
                    failures.append(f"{where}: wrong output through the binding\n  input:    "
                                    f"{arg!r}\n  expected: {expected!r}\n  got:      {out!r}")
            else:
                if via not in ("cli", "python") and step != "?":
                    r = subprocess.CompletedProcess(None, *via_call(via, sargs, opts, arg), b"")
                else:
                    r = subprocess.run([memtool, *sargs, *opts, "call"], input=arg,
                                       capture_output=True, timeout=60, env=clean_env())
                if r.returncode != EXIT[step]:
                    failures.append(f"{where}: exit {r.returncode}, expected {EXIT[step]}"
                                    f"\n  input:  {arg!r}\n  stdout: {r.stdout!r}"
                                    f"\n  stderr: {r.stderr!r}")
                elif step != "?" and compare and r.stdout != expected:
                    failures.append(f"{where}: wrong output\n  input:    {arg!r}"
                                    f"\n  expected: {expected!r}\n  got:      {r.stdout!r}")
                elif step == "?" and (r.stdout != b"" or not r.stderr.startswith(b"memtool")):
                    failures.append(f"{where}: a usage error prints nothing on stdout and says "
                                    f"why on stderr; got {r.stdout!r} / {r.stderr!r}")
    finally:
        if binding is not None:
            binding.close()
        subprocess.run(["chmod", "-R", "u+rwx", root])
        shutil.rmtree(root, ignore_errors=True)
    return failures


def main():
    args = sys.argv[1:]
    kind, via, encrypt = "file", "cli", False
    while args[:1] in (["--store"], ["--via"], ["--encrypt"]) and len(args) > 1:
        if args[0] == "--encrypt":
            encrypt = True
            args = args[1:]
            continue
        if args[0] == "--store":
            kind = args[1]
        else:
            via = args[1]
        args = args[2:]
    if kind not in STORES or len(args) < 2:
        raise SystemExit("usage: run.py [--store file|sqlite|postgresql|remote] [--via python|NAME] "
                         "[--encrypt] MEMTOOL FILE.test...")
    memtool, files = args[0], args[1:]
    failed = 0
    for path in files:
        failures = run_file(memtool, path, kind, via, encrypt)
        for f in failures:
            print(f"FAIL {f}")
        failed += bool(failures)
    for where, why, ran in SKIPPED:
        print(f"{where}: {'output not compared' if ran else 'step not run'} on a remote store: "
              f"{why}")
    ran = sum(1 for s in SKIPPED if s[2])
    print(f"{len(files) - failed} passed, {failed} failed" +
          (f"; on a remote store {len(SKIPPED) - ran} steps not run, {ran} outputs not compared"
           if SKIPPED else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
