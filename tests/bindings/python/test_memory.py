"""memtool.Memory and MemtoolMemoryTool without the SDK: results, history,
stores and options, bad arguments, and finding the library."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import memtool

VIEW_ROOT = ("Here're the files and directories up to 2 levels deep in /memories, excluding "
             "hidden items and node_modules:\n")


def cli_call(cli, store, tool_input):
    """`memtool call` on the same store: what the binding must match."""
    args = ["--root", str(store)] if isinstance(store, pathlib.Path) else ["--store", store]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
    r = subprocess.run([cli, *args, "call"], input=json.dumps(tool_input).encode(),
                       capture_output=True, env=env, timeout=60)
    return r.stdout.decode(), r.returncode


def test_sdk_is_absent_here():
    # These tests are the standalone path; test_sdk.py is the subclass path.
    assert memtool.HAVE_SDK is False
    assert memtool.MemtoolMemoryTool.__mro__[1] is object


def test_results_match_memtool_call(tmp_path, cli):
    steps = [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/notes.md", "file_text": "# Notes\n- a\n- b\n"},
        {"command": "create", "path": "/memories/notes.md", "file_text": "again"},
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "- a\n- b",
         "new_str": "- A\n- B\n- C"},
        {"command": "insert", "path": "/memories/notes.md", "insert_line": 1,
         "insert_text": "inserted\n"},
        {"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]},
        {"command": "view", "path": "/memories/../etc/passwd"},
        {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/d/n.md"},
        {"command": "view", "path": "/memories"},
        {"command": "delete", "path": "/memories/d"},
        {"command": "bogus"},
    ]
    for kind in ("file", "sqlite"):
        ours = tmp_path / (kind + "-binding")
        theirs = tmp_path / (kind + "-cli")
        if kind == "file":
            a, b = ours, theirs
        else:
            a, b = "sqlite:%s.db" % ours, "sqlite:%s.db" % theirs
        with memtool.MemtoolMemoryTool(store=a) as tool:
            for step in steps:
                want, status = cli_call(cli, b, step)
                if status == 0:
                    assert tool.call(step) == want
                else:
                    assert status == 1
                    with pytest.raises(memtool.ToolError) as e:
                        tool.call(step)
                    assert e.value.content == want and str(e.value) == want


def test_sdk_shaped_methods(store):
    tool = memtool.MemtoolMemoryTool(store=store)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"
    assert memtool.MemtoolMemoryTool(store=tool.memory, cache_control={"type": "ephemeral"}) \
        .to_dict()["cache_control"] == {"type": "ephemeral"}
    assert tool.create({"path": "/memories/a.md", "file_text": "one\ntwo\n"}) == \
        "File created successfully at: /memories/a.md"
    assert tool.execute({"command": "view", "path": "/memories/a.md"}) == \
        "Here's the content of /memories/a.md with line numbers:\n     1\tone\n     2\ttwo"
    assert tool.insert({"path": "/memories/a.md", "insert_line": 2, "insert_text": "three"}) == \
        "The file /memories/a.md has been edited."
    assert tool.rename({"old_path": "/memories/a.md", "new_path": "/memories/b.md"}) == \
        "Successfully renamed /memories/a.md to /memories/b.md"
    with pytest.raises(memtool.ToolError, match="does not exist"):
        tool.delete({"path": "/memories/a.md"})
    with pytest.raises(ValueError, match="view\\(\\) was given a 'delete' command"):
        tool.view({"command": "delete", "path": "/memories/b.md"})
    with pytest.raises(TypeError, match="SDK command model or a mapping"):
        tool.view("/memories")
    assert tool.delete({"path": "/memories/b.md"}) == "Successfully deleted /memories/b.md"
    # A tool_use input that is not an object is the model's mistake: an error result.
    with pytest.raises(memtool.ToolError, match="must be a JSON object, not null"):
        tool.call(None)
    tool.close()


def test_clear_all_memory(store):
    with memtool.MemtoolMemoryTool(store=store) as tool:
        for p in ("/memories/a.md", "/memories/d/e/f.md", "/memories/node_modules/x"):
            tool.create({"path": p, "file_text": "x"})
        assert tool.clear_all_memory() == "All memory cleared"
        assert tool.view({"path": "/memories"}) == VIEW_ROOT + "0B\t/memories"
        assert tool.memory.usage() == memtool.Usage(0, 0, 0)
        # Hidden names are not listed: what is left is said, not ignored.
        tool.create({"path": "/memories/.secret", "file_text": "x"})
        with pytest.raises(memtool.MemtoolError, match="1 files and 0 directories"):
            tool.clear_all_memory()


def test_history(store):
    with memtool.Memory(store, actor="app:test") as mem:
        mem.call({"command": "create", "path": "/memories/n.md", "file_text": "v1\n"})
        mem.call({"command": "str_replace", "path": "/memories/n.md", "old_str": "v1",
                  "new_str": "v2 secret"})
        mem.set_actor("someone")
        mem.call({"command": "str_replace", "path": "/memories/n.md", "old_str": "v2 secret",
                  "new_str": "v3"})
        log = mem.log("/memories/n.md")
        assert [v.id for v in log] == [3, 2, 1]
        assert [v.operation for v in log] == ["modified", "modified", "created"]
        assert [v.actor for v in log] == ["someone", "app:test", "app:test"]
        assert log[2].path == "/memories/n.md" and log[2].content_size == 3
        assert log[0].memory_id.startswith("mem_") and len(log[0].memory_id) == 20
        assert log[0].time.year >= 2024
        assert mem.log(actor="someone", limit=5) == [log[0]]
        assert mem.log(before_id=3, limit=1) == [log[1]]
        assert mem.log(operation="created") == [log[2]]
        assert mem.version(2) == log[1]
        assert mem.version_content(1) == b"v1\n"
        assert mem.read("/memories/n.md") == b"v3\n"
        import hashlib
        assert mem.sha256("/memories/n.md") == hashlib.sha256(b"v3\n").hexdigest()
        new, restored = mem.undo("/memories/n.md")
        assert (new, restored) == (4, 2)
        assert mem.read("/memories/n.md") == b"v2 secret\n"
        assert mem.restore(1) == 5
        assert mem.read("/memories/n.md") == b"v1\n"
        mem.redact(2)
        assert mem.version(2).redacted and mem.version(2).path is None
        with pytest.raises(memtool.NotFoundError):
            mem.version_content(2)
        with pytest.raises(memtool.InvalidArgumentError, match="current"):
            mem.redact(5)
        with pytest.raises(memtool.NotFoundError):
            mem.version(99)
        assert mem.history_warning is None
    with memtool.Memory(store, history=False) as mem:
        with pytest.raises(memtool.NotSupportedError):
            mem.log()


def test_options_and_tenants(store, tmp_path):
    audit = tmp_path / "audit.jsonl"
    with memtool.Memory(store, tenant="alice", max_file_size=10, max_files=2, view_limit=200,
                        lock_timeout=0.5, durability="none", history_keep=0, history_days=0,
                        audit=audit) as alice, memtool.Memory(store, tenant="bob") as bob:
        assert not alice.call({"command": "create", "path": "/memories/a", "file_text": "x"}) \
            .is_error
        big = alice.call({"command": "create", "path": "/memories/b", "file_text": "x" * 11})
        assert big.is_error and "10" in big.text
        alice.call({"command": "create", "path": "/memories/c", "file_text": "y"})
        third = alice.call({"command": "create", "path": "/memories/d", "file_text": "z"})
        assert third.is_error
        # A tenant sees only its own memories.
        assert bob.call({"command": "view", "path": "/memories"}).text == \
            VIEW_ROOT + "0B\t/memories"
        assert alice.usage() == memtool.Usage(2, 2, 0)
    lines = audit.read_text().splitlines()
    assert [json.loads(line)["path"] for line in lines] == ["/memories/" + n for n in "abcd"]
    with pytest.raises(memtool.InvalidArgumentError, match="at least 200"):
        memtool.Memory(store, view_limit=100)


def test_file_url_and_path_are_one_store(tmp_path):
    with memtool.Memory(tmp_path / "s") as a:
        a.call({"command": "create", "path": "/memories/x", "file_text": "1"})
    with memtool.Memory("file:%s" % (tmp_path / "s")) as b:
        assert b.read("/memories/x") == b"1"


def test_a_plain_path_is_a_directory_as_root_takes_it(tmp_path, monkeypatch):
    # The SDK helper's BetaLocalFilesystemMemoryTool(base_path="./memory") kept
    # /memories/x at ./memory/memories/x: its directory is the store's root.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "memory" / "memories").mkdir(parents=True)
    (tmp_path / "memory" / "memories" / "notes.md").write_text("kept by the SDK helper\n")
    tool = memtool.MemtoolMemoryTool(store="./memory/memories")
    try:
        assert tool.run({"command": "view", "path": "/memories/notes.md"}) == memtool.Result(
            "Here's the content of /memories/notes.md with line numbers:\n"
            "     1\tkept by the SDK helper", False)
        assert not tool.run({"command": "create", "path": "/memories/new.md",
                             "file_text": "x"}).is_error
    finally:
        tool.close()
    assert (tmp_path / "memory" / "memories" / "new.md").read_text() == "x"
    # The same directory however it is named: relative, absolute, Path, file: URL.
    for spec in ("memory/memories", str(tmp_path / "memory" / "memories"),
                 tmp_path / "memory" / "memories", "file:%s" % (tmp_path / "memory" / "memories")):
        with memtool.Memory(spec) as mem:
            assert mem.read("/memories/new.md") == b"x", spec
    # A colon in the first component reads as a scheme; "./" makes it a path.
    with memtool.Memory("./a:b") as mem:
        mem.call({"command": "create", "path": "/memories/c", "file_text": "y"})
    assert (tmp_path / "a:b" / "c").read_text() == "y"


@pytest.mark.parametrize("call, exc, words", [
    (lambda: memtool.Memory(None), TypeError, "store is required"),
    (lambda: memtool.Memory(42), TypeError, "URL or a path \\(str or pathlib.Path\\), not int"),
    (lambda: memtool.Memory(""), ValueError, "store is empty"),
    (lambda: memtool.Memory("ftp:x"), memtool.InvalidArgumentError, "not a store URL"),
    (lambda: memtool.Memory("sqlite:/nonexistent/dir/m.db"), memtool.MemtoolError, "SQLite"),
    (lambda: memtool.Memory("file:/tmp/x", max_files="10"), TypeError, "max_files must be an int"),
    (lambda: memtool.Memory("file:/tmp/x", max_files=True), TypeError, "max_files"),
    (lambda: memtool.Memory("file:/tmp/x", max_files=-1), ValueError, "between 0 and"),
    (lambda: memtool.Memory("file:/tmp/x", max_files=2**64), ValueError, "between 0 and"),
    (lambda: memtool.Memory("file:/tmp/x", durability="sometimes"), ValueError, "'full'"),
    (lambda: memtool.Memory("file:/tmp/x", history="on"), TypeError, "history must be a bool"),
    (lambda: memtool.Memory("file:/tmp/x", lock_timeout="5s"), TypeError, "seconds"),
    (lambda: memtool.Memory("file:/tmp/x", actor="a\0b"), ValueError, "NUL"),
    (lambda: memtool.Memory("file:/tmp/x", actor=""), memtool.InvalidArgumentError, "actor"),
    (lambda: memtool.Memory("file:/tmp/x", tenant="../x"), memtool.InvalidArgumentError,
     "tenant"),
    (lambda: memtool.Memory("file:/tmp/x", nonsense=1), TypeError, "nonsense"),
    (lambda: memtool.MemtoolMemoryTool(), TypeError, "store"),
    (lambda: memtool.MemtoolMemoryTool(store=None), TypeError, "store is required"),
])
def test_bad_arguments_raise(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_bad_calls_raise(tmp_path):
    mem = memtool.Memory(tmp_path / "s")
    for bad, exc, words in [
        (lambda: mem.call(None), TypeError, "mapping"),
        (lambda: mem.call("{}"), TypeError, "mapping"),
        (lambda: mem.call({"command": "create", "path": "/memories/a", "file_text": {1, 2}}),
         TypeError, "cannot be sent as JSON"),
        (lambda: mem.call({"command": "view", "path": "/memories", "x": float("nan")}),
         TypeError, "cannot be sent as JSON"),
        (lambda: mem.call_json(None), TypeError, "JSON text"),
        (lambda: mem.read(None), TypeError, "path must be a str"),
        (lambda: mem.read("/memories/a\0b"), ValueError, "NUL"),
        (lambda: mem.read("/memories/\udc00"), ValueError, "not valid Unicode"),
        (lambda: mem.version("1"), TypeError, "version id must be an int"),
        (lambda: mem.version(0), ValueError, "between 1"),
        (lambda: mem.version(2**63), ValueError, "between 1"),
        (lambda: mem.log(operation="edited"), ValueError, "'created'"),
        (lambda: mem.log(limit=0), ValueError, "limit"),
        (lambda: mem.undo(5), TypeError, "path"),
        (lambda: mem.set_actor("x" * 1000), memtool.InvalidArgumentError, "actor"),
        (lambda: memtool.MemtoolMemoryTool(store=mem, actor="x"), TypeError, "already open"),
    ]:
        with pytest.raises(exc, match=words):
            bad()
    # Strings the model sends are taken as they are: a malformed tool input is a
    # tool error result, never an exception.
    res = mem.call_json(b'{"command": "view", "path": ')
    assert res.is_error and res.text.startswith("Error: The tool input is not valid JSON")
    assert mem.call_json('{"command":"view","path":"/memories/\\ud800"}').is_error
    mem.close()
    mem.close()  # closing twice is nothing
    assert mem.closed and "closed" in repr(mem)
    for after in (lambda: mem.call({"command": "view", "path": "/memories"}),
                  lambda: mem.log(), lambda: mem.read("/memories/a"), lambda: mem.usage(),
                  lambda: mem.set_actor("x"), lambda: mem.history_warning):
        with pytest.raises(memtool.ClosedError, match="closed"):
            after()
    assert issubclass(memtool.ClosedError, ValueError)


def run_python(code, env):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=env, timeout=60)
    return r


def base_env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMTOOL_LIBRARY", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["PKG_CONFIG_LIBDIR"] = str(tmp_path / "no-pc")  # no system memtool.pc either
    return env


def test_library_missing_names_all_three_ways(tmp_path):
    # find_library is made to fail too: a memtool installed on this machine
    # must not make the test pass or fail.
    r = run_python("""
        import ctypes.util
        ctypes.util.find_library = lambda name: None
        import memtool
        try:
            memtool.Memory("file:/tmp/never")
        except memtool.LibraryNotFoundError as e:
            print(e)
        """, base_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "MEMTOOL_LIBRARY" in r.stdout and "pkg-config" in r.stdout
    assert "find_library" in r.stdout and "standard library path" in r.stdout


def test_library_explicit_path_that_does_not_load(tmp_path):
    env = base_env(tmp_path)
    env["MEMTOOL_LIBRARY"] = str(tmp_path / "nope.so")
    r = run_python("""
        import memtool
        try:
            memtool.Memory("file:/tmp/never")
        except memtool.LibraryNotFoundError as e:
            print(e)
        """, env)
    assert "MEMTOOL_LIBRARY=%s cannot be loaded" % (tmp_path / "nope.so") in r.stdout, r.stderr


@pytest.mark.parametrize("way", ["pkg-config", "find_library"])
def test_library_found_each_way(tmp_path, library, way):
    env = base_env(tmp_path)
    libdir = os.path.dirname(os.path.realpath(library))
    if way == "pkg-config":
        pc = tmp_path / "pc"
        pc.mkdir()
        (pc / "memtool.pc").write_text(
            "libdir=%s\nName: memtool\nDescription: x\nVersion: 0.1.0\nLibs: -L${libdir} "
            "-lmemtool\n" % libdir)
        env["PKG_CONFIG_PATH"] = str(pc)
    else:
        env["LD_LIBRARY_PATH"] = libdir
    r = run_python("""
        import ctypes.util, sys
        if %r == "pkg-config":
            ctypes.util.find_library = lambda name: None
        import memtool
        m = memtool.Memory("file:%s")
        print(m.call({"command": "view", "path": "/memories"}).text)
        """ % (way, tmp_path / "store"), env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == VIEW_ROOT + "0B\t/memories\n"


def test_search(tmp_path):
    with memtool.Memory(tmp_path / "memories") as m:
        m.call({"command": "create", "path": "/memories/ops/deploy.md",
                "file_text": "The deploy script\nruns nightly; deploy again\n"})
        m.call({"command": "create", "path": "/memories/notes.md", "file_text": "Кафе\n"})
        hits = m.search("deploy")
        assert hits == [memtool.SearchHit(path="/memories/ops/deploy.md", score=hits[0].score,
                                          lines=[1, 2], more_lines=False, matches=2, line=1,
                                          before="The ", match="deploy", after=" script")]
        assert hits[0].score > 0
        assert [h.path for h in m.search("кафе", path="/memories")] == ["/memories/notes.md"]
        assert m.search("deploy", path="/memories/ops", limit=1)[0].lines == [1, 2]
        assert m.search("absent") == []
        with pytest.raises(memtool.InvalidArgumentError, match="not closed"):
            m.search('"open')
        with pytest.raises(TypeError):
            m.search(42)
        with pytest.raises(ValueError):
            m.search("x", limit=0)


def test_secrets_policy(tmp_path):
    key = "AKIA" + "Z7Q4XK2M6PLW3TRV"
    text = "aws_access_key_id = %s\n" % key
    with memtool.Memory(tmp_path / "a") as m:
        r = m.call({"command": "create", "path": "/memories/k.md", "file_text": text})
        assert r.is_error and key not in r.text and "secret" in r.text
    with memtool.Memory(tmp_path / "b", secrets="redact") as m:
        r = m.call({"command": "create", "path": "/memories/k.md", "file_text": text})
        assert not r.is_error and "redacted" in r.text
        assert key not in m.read("/memories/k.md").decode()
    with memtool.Memory(tmp_path / "c", secrets_allow=["Z7Q4XK2M"]) as m:
        r = m.call({"command": "create", "path": "/memories/k.md", "file_text": text})
        assert not r.is_error
        assert m.read("/memories/k.md").decode() == text
    with pytest.raises(ValueError):
        memtool.Memory(tmp_path / "d", secrets="maybe")
    with pytest.raises(TypeError):
        memtool.Memory(tmp_path / "d", secrets_allow="x")
    with pytest.raises(memtool.InvalidArgumentError):
        memtool.Memory(tmp_path / "d", secrets_allow=["("])
