"""The subclass path: memtool's tools as the SDK's memory tools, in a tool
runner's conversation with the stand-in Messages API (tests/agent/fake_api.py).

Run with sdk_stand_in/ on PYTHONPATH (ctest does): a stand-in of the SDK's
classes under their names and signatures (see sdk_stand_in/anthropic), as
the SDK itself cannot be installed here.
"""
import asyncio
import json
import os
import subprocess
import sys

import pytest

import anthropic
import fake_api
import memtool
from anthropic.lib.tools import (BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool,
                                 BetaBuiltinFunctionTool, ToolError)
from anthropic.types.beta import (BetaMemoryTool20250818CreateCommand,
                                  BetaMemoryTool20250818ViewCommand)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
with open(os.path.join(HERE, "cases", "tool_runner.json")) as f:
    CASE = json.load(f)
PROMPT = "I'm starting the parser rewrite. Keep notes as we go."

if "sdk_stand_in" not in (anthropic.__file__ or ""):
    raise RuntimeError("test_sdk.py runs against sdk_stand_in/: put it on PYTHONPATH")


def test_the_tools_are_the_sdks_memory_tools(store):
    assert memtool.HAVE_SDK
    assert issubclass(memtool.MemtoolMemoryTool, BetaAbstractMemoryTool)
    assert issubclass(memtool.MemtoolMemoryTool, BetaBuiltinFunctionTool)
    assert issubclass(memtool.AsyncMemtoolMemoryTool, BetaAsyncAbstractMemoryTool)
    assert issubclass(memtool.ToolError, ToolError)
    with memtool.MemtoolMemoryTool(store=store, cache_control={"type": "ephemeral"}) as tool:
        assert tool.to_dict() == {"type": "memory_20250818", "name": "memory",
                                  "cache_control": {"type": "ephemeral"}}
        assert BetaBuiltinFunctionTool.name.fget(tool) == "memory"
        # The SDK's command models, as its execute() hands them to the methods.
        create = BetaMemoryTool20250818CreateCommand(command="create", path="/memories/a.md",
                                                     file_text="hello\n")
        assert tool.create(create) == "File created successfully at: /memories/a.md"
        view = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/a.md",
                                                 view_range=[1, 1])
        assert tool.execute(view) == tool.view(view) == \
            "Here's the content of /memories/a.md with line numbers:\n     1\thello"
        # The base class's own call() (input -> command model -> execute ->
        # view) gives what the tool's call() gives.
        tool_input = {"command": "view", "path": "/memories"}
        assert BetaAbstractMemoryTool.call(tool, tool_input) == tool.call(tool_input)
        with pytest.raises(ToolError) as e:
            tool.call({"command": "view", "path": "/memories/../etc/passwd"})
        assert e.value.content == \
            "Error: Path /memories/../etc/passwd would escape /memories directory"
        assert tool.clear_all_memory() == "All memory cleared"


def check_conversation(fake, final, store):
    assert fake.failures == []
    assert fake.next == len(CASE["exchanges"])
    assert [b.text for b in final.content if b.type == "text"] == [CASE["final_text"]]
    with memtool.Memory(store) as mem:
        for rel, content in CASE["files"].items():
            assert mem.read("/memories/" + rel) == content.encode()
        log = mem.log("/memories/progress.md")
        assert [(v.operation, v.actor) for v in log] == [("modified", "agent:test"),
                                                         ("created", "agent:test")]


def test_tool_runner_conversation(store):
    fake = fake_api.FakeAPI(CASE["exchanges"]).start()
    try:
        client = anthropic.Anthropic(api_key=fake_api.API_KEY, base_url=fake.url())
        with memtool.MemtoolMemoryTool(store=store, actor="agent:test") as memory:
            runner = client.beta.messages.tool_runner(
                model="claude-sonnet-4-5", max_tokens=1024, tools=[memory],
                betas=["context-management-2025-06-27"],
                messages=[{"role": "user", "content": PROMPT}])
            final = runner.until_done()
    finally:
        fake.stop()
    check_conversation(fake, final, store)


def test_async_tool_runner_conversation(store):
    fake = fake_api.FakeAPI(CASE["exchanges"]).start()

    async def converse():
        client = anthropic.AsyncAnthropic(api_key=fake_api.API_KEY, base_url=fake.url())
        async with memtool.AsyncMemtoolMemoryTool(store=store, actor="agent:test") as memory:
            assert memory.to_dict() == {"type": "memory_20250818", "name": "memory"}
            runner = client.beta.messages.tool_runner(
                model="claude-sonnet-4-5", max_tokens=1024, tools=[memory],
                betas=["context-management-2025-06-27"],
                messages=[{"role": "user", "content": PROMPT}])
            return await runner.until_done()

    try:
        final = asyncio.run(converse())
    finally:
        fake.stop()
    check_conversation(fake, final, store)


def test_async_methods(store):
    async def go():
        tool = memtool.AsyncMemtoolMemoryTool(store=store)
        assert await tool.create({"path": "/memories/x", "file_text": "1\n"}) == \
            "File created successfully at: /memories/x"
        results = await asyncio.gather(*[
            tool.insert({"path": "/memories/x", "insert_line": 1, "insert_text": str(i)})
            for i in range(20)])
        assert set(results) == {"The file /memories/x has been edited."}
        with pytest.raises(memtool.ToolError, match="does not exist"):
            await tool.view({"path": "/memories/nope"})
        assert (await tool.run({"command": "view", "path": "/nope"})).is_error
        assert await tool.clear_all_memory() == "All memory cleared"
        await tool.aclose()
        with pytest.raises(memtool.ClosedError):
            await tool.view({"path": "/memories"})

    asyncio.run(go())


def test_example_runs_a_conversation(tmp_path):
    fake = fake_api.FakeAPI(CASE["exchanges"]).start()
    env = dict(os.environ, ANTHROPIC_API_KEY=fake_api.API_KEY, ANTHROPIC_BASE_URL=fake.url(),
               MEMTOOL_STORE="sqlite:%s" % (tmp_path / "m.db"),
               PYTHONPATH=os.pathsep.join(sys.path))
    try:
        r = subprocess.run([sys.executable, os.path.join(SOURCE, "bindings", "python", "examples",
                                                         "tool_runner.py"), PROMPT],
                           capture_output=True, text=True, env=env, timeout=60)
    finally:
        fake.stop()
    assert r.returncode == 0, r.stderr
    assert fake.failures == []
    assert r.stdout.splitlines() == ["Let me check my memory first.", "The tokenizer is done.",
                                     CASE["final_text"]]
    assert "memory: str_replace /memories/progress.md\n" in r.stderr
    assert "history: 2 modified agent:example /memories/progress.md\n" in r.stderr
