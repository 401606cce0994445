"""The memory tool for the Anthropic Python SDK's tool runner.

With the SDK importable, MemtoolMemoryTool is a BetaAbstractMemoryTool and
AsyncMemtoolMemoryTool a BetaAsyncAbstractMemoryTool (anthropic.lib.tools),
so ``client.beta.messages.tool_runner(tools=[tool], ...)`` takes them; without
it they are plain classes with the same methods. Either way a result is the
library's exact text: a success is returned, an error raised as ToolError,
which the runner sends back with is_error: true.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Mapping, Optional, TypeVar, Union

from ._errors import MemtoolError, ToolError
from ._memory import Memory, Result, StoreSpec

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool as _SyncBase  # type: ignore
    from anthropic.lib.tools import BetaAsyncAbstractMemoryTool as _AsyncBase  # type: ignore

    HAVE_SDK = True
except ImportError:
    _SyncBase = object  # type: ignore[misc,assignment]
    _AsyncBase = object  # type: ignore[misc,assignment]
    HAVE_SDK = False

T = TypeVar("T")

_COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


def _command_input(command: Any, name: Optional[str]) -> Dict[str, Any]:
    """A command as the tool input it came from: an SDK command model
    (BetaMemoryTool20250818ViewCommand, ...), or a mapping."""
    if isinstance(command, Mapping):
        d = dict(command)
    elif callable(getattr(command, "to_dict", None)):
        d = dict(command.to_dict())  # the SDK's models: the API's own keys, as sent
    elif callable(getattr(command, "model_dump", None)):
        d = dict(command.model_dump(exclude_unset=True))
    else:
        raise TypeError("a memory command is an SDK command model or a mapping, not %s"
                        % type(command).__name__)
    if name is not None:
        given = d.setdefault("command", name)
        if given != name:
            raise ValueError("%s() was given a %r command" % (name, given))
    return d


def _open(store: Union[StoreSpec, Memory, None], options: Dict[str, Any]) -> "tuple[Memory, bool]":
    if isinstance(store, Memory):
        if options:
            raise TypeError("options (%s) are for a store the tool opens; this Memory is "
                            "already open" % ", ".join(sorted(options)))
        return store, False
    if store is None:
        raise TypeError("store is required: a URL (file:DIR, sqlite:PATH, "
                        "postgresql://USER@HOST/DB), the path of a directory or a "
                        "memtool.Memory")
    return Memory(store, **options), True


def _to_dict(cache_control: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    param: Dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
    if cache_control is not None:
        param["cache_control"] = cache_control
    return param


def _text_or_raise(res: Result) -> str:
    if res.is_error:
        raise ToolError(res.text)
    return res.text


def _clear_all(memory: Memory) -> str:
    """Delete every memory. The listing shows neither hidden names nor
    node_modules: node_modules is named, and what is still counted after
    that is reported rather than left silently."""
    while True:
        listing = memory.call({"command": "view", "path": "/memories"})
        if listing.is_error:
            raise ToolError(listing.text)
        top = []
        for line in listing.text.split("\n")[2:]:
            _, sep, path = line.partition("\t")
            rest = path[len("/memories/"):].rstrip("/")
            if sep and path.startswith("/memories/") and rest and "/" not in rest:
                top.append("/memories/" + rest)
        if not top:
            break
        for path in top:
            res = memory.call({"command": "delete", "path": path})
            if res.is_error and "does not exist" not in res.text:
                raise ToolError(res.text)
    memory.call({"command": "delete", "path": "/memories/node_modules"})
    left = memory.usage()
    if left.files or left.dirs:
        raise MemtoolError("%d files and %d directories with hidden names (starting with '.') "
                           "remain: the listing does not show them; delete them by path"
                           % (left.files, left.dirs))
    return "All memory cleared"


class MemtoolMemoryTool(_SyncBase):  # type: ignore[misc,valid-type]
    """The memory tool (memory_20250818) on a memtool store.

    ``MemtoolMemoryTool(store="sqlite:/srv/memories.db", tenant="alice")``;
    ``store`` may also be a pathlib.Path (a directory) or an open
    memtool.Memory (shared, not closed by the tool). The other keyword
    arguments are memtool.Memory's options. Safe to use from many threads.
    """

    def __init__(self, store: Union[StoreSpec, Memory], *,
                 cache_control: Optional[Mapping[str, Any]] = None, **options: Any) -> None:
        self._memory, self._owned = _open(store, options)
        if HAVE_SDK:
            super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        self._cache_control = cache_control

    # ---- what the SDK's runner calls ----

    def to_dict(self) -> Dict[str, Any]:  # type: ignore[override]
        return _to_dict(self._cache_control)

    @property
    def name(self) -> str:
        return "memory"

    def call(self, input: object) -> str:  # type: ignore[override]
        """Run a tool_use block's input: its text, or ToolError with the
        error's text. The input goes to the library as it came, so a malformed
        one (not even an object) gets the library's own error result."""
        return _text_or_raise(self._memory.call_value(input))

    def execute(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, None)))

    # ---- the six commands (SDK command models or mappings) ----

    def view(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "view")))

    def create(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "create")))

    def str_replace(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "str_replace")))

    def insert(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "insert")))

    def delete(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "delete")))

    def rename(self, command: Any) -> str:
        return _text_or_raise(self._memory.call(_command_input(command, "rename")))

    def clear_all_memory(self) -> str:
        return _clear_all(self._memory)

    # ---- beyond the SDK's interface ----

    @property
    def memory(self) -> Memory:
        """The store, for history: log, version, version_content, restore,
        undo, redact, read, sha256, usage."""
        return self._memory

    def run(self, input: Mapping[str, Any]) -> Result:
        """A tool input's result, errors included, without raising."""
        return self._memory.call(input)

    def tool_result(self, block: Mapping[str, Any]) -> Dict[str, Any]:
        """A tool_use block's tool_result block."""
        return self._memory.tool_result(block)

    def close(self) -> None:
        """Close the store if the tool opened it."""
        if self._owned:
            self._memory.close()

    def __enter__(self) -> "MemtoolMemoryTool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run a blocking library call off the event loop (anyio when the SDK
    brought it, so trio works too; asyncio otherwise)."""
    try:
        import anyio.to_thread  # type: ignore

        return await anyio.to_thread.run_sync(functools.partial(fn, *args))
    except ImportError:
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None,
                                                                functools.partial(fn, *args))


class AsyncMemtoolMemoryTool(_AsyncBase):  # type: ignore[misc,valid-type]
    """MemtoolMemoryTool for the async client (AsyncAnthropic): the same
    methods as coroutines, each library call in a worker thread."""

    def __init__(self, store: Union[StoreSpec, Memory], *,
                 cache_control: Optional[Mapping[str, Any]] = None, **options: Any) -> None:
        self._memory, self._owned = _open(store, options)
        if HAVE_SDK:
            super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        self._cache_control = cache_control

    def to_dict(self) -> Dict[str, Any]:  # type: ignore[override]
        return _to_dict(self._cache_control)

    @property
    def name(self) -> str:
        return "memory"

    async def _run(self, input: Dict[str, Any]) -> str:
        return _text_or_raise(await _in_thread(self._memory.call, input))

    async def call(self, input: object) -> str:  # type: ignore[override]
        return _text_or_raise(await _in_thread(self._memory.call_value, input))

    async def execute(self, command: Any) -> str:
        return await self._run(_command_input(command, None))

    async def view(self, command: Any) -> str:
        return await self._run(_command_input(command, "view"))

    async def create(self, command: Any) -> str:
        return await self._run(_command_input(command, "create"))

    async def str_replace(self, command: Any) -> str:
        return await self._run(_command_input(command, "str_replace"))

    async def insert(self, command: Any) -> str:
        return await self._run(_command_input(command, "insert"))

    async def delete(self, command: Any) -> str:
        return await self._run(_command_input(command, "delete"))

    async def rename(self, command: Any) -> str:
        return await self._run(_command_input(command, "rename"))

    async def clear_all_memory(self) -> str:
        return await _in_thread(_clear_all, self._memory)

    @property
    def memory(self) -> Memory:
        return self._memory

    async def run(self, input: Mapping[str, Any]) -> Result:
        return await _in_thread(self._memory.call, input)

    async def aclose(self) -> None:
        if self._owned:
            await _in_thread(self._memory.close)

    def close(self) -> None:
        if self._owned:
            self._memory.close()

    async def __aenter__(self) -> "AsyncMemtoolMemoryTool":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
