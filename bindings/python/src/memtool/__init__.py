"""memtool: the memory tool (memory_20250818) on libmemtool, for Python.

    from anthropic import Anthropic
    from memtool import MemtoolMemoryTool

    memory = MemtoolMemoryTool(store="sqlite:/srv/memories.db")
    runner = Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[memory],
        messages=[{"role": "user", "content": "Remember that I like coffee"}])
    for message in runner:
        ...

libmemtool is found through MEMTOOL_LIBRARY (a path to libmemtool.so),
`pkg-config --variable=libdir memtool`, or the standard library path.
"""
from ._errors import (BusyError, ClosedError, ConflictError, ExistsError, InvalidArgumentError,
                      LibraryNotFoundError, LimitError, MemtoolError, NotFoundError,
                      NotSupportedError, ToolError)
from ._lib import OPTIONS_VERSION
from ._memory import Memory, Result, SearchHit, Usage, Version
from ._tool import HAVE_SDK, AsyncMemtoolMemoryTool, MemtoolMemoryTool

__version__ = "0.1.0"

__all__ = [
    "AsyncMemtoolMemoryTool", "BusyError", "ClosedError", "ConflictError", "ExistsError",
    "HAVE_SDK", "InvalidArgumentError", "LibraryNotFoundError", "LimitError", "Memory",
    "MemtoolError", "MemtoolMemoryTool", "NotFoundError", "NotSupportedError", "OPTIONS_VERSION",
    "Result", "SearchHit", "ToolError", "Usage", "Version",
]
