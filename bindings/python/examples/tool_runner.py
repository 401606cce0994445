"""A conversation with Claude through the SDK's tool runner, its memory in a
memtool store.

    pip install anthropic memtool
    export ANTHROPIC_API_KEY=sk-ant-...
    python3 tool_runner.py "I'm starting the parser rewrite. Keep notes as we go."

MEMTOOL_STORE names the store (default: sqlite:memories.db here); libmemtool is
found through MEMTOOL_LIBRARY, pkg-config or the standard library path.
After the conversation, the memories' history is printed: every change the
model made, by whom and when, and each one can be undone.
"""
import os
import sys

from anthropic import Anthropic

from memtool import MemtoolMemoryTool


def main() -> int:
    prompt = " ".join(sys.argv[1:]) or "What do you remember about me?"
    store = os.environ.get("MEMTOOL_STORE", "sqlite:memories.db")
    client = Anthropic()
    with MemtoolMemoryTool(store=store, actor="agent:example") as memory:
        runner = client.beta.messages.tool_runner(
            model=os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
            max_tokens=2048,
            tools=[memory],
            betas=["context-management-2025-06-27"],
            messages=[{"role": "user", "content": prompt}],
        )
        for message in runner:
            for block in message.content:
                if block.type == "text":
                    print(block.text)
                elif block.type == "tool_use":
                    print("memory: %s %s" % (block.input.get("command"),
                                             block.input.get("path", "")), file=sys.stderr)
        for v in memory.memory.log(limit=10):
            print("history: %d %s %s %s" % (v.id, v.operation, v.actor, v.path),
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
