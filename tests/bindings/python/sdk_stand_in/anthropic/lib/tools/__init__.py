"""A minimal stand-in of the SDK's tool base classes.

The class names, method names and signatures are taken from the SDK's public
source (anthropics/anthropic-sdk-python: src/anthropic/lib/tools/__init__.py,
_beta_functions.py for ToolError, BetaBuiltinFunctionTool and
BetaAsyncBuiltinFunctionTool, _beta_builtin_memory_tool.py for
BetaAbstractMemoryTool and BetaAsyncAbstractMemoryTool); the bodies are
reduced to what those signatures promise: call() turns the input into a
command and execute() dispatches on its `command` to the six abstract
methods; clear_all_memory() is not implemented in the base; ToolError carries
the `content` the tool runner sends back with is_error: true.
"""
from abc import ABC, abstractmethod
from typing import Any, Dict, Iterable, Optional, Union

from ...types.beta import command_from_input

BetaFunctionToolResultType = Union[str, Iterable[Dict[str, Any]]]


class ToolError(Exception):
    def __init__(self, content: BetaFunctionToolResultType) -> None:
        super().__init__(content if isinstance(content, str) else "Tool error")
        self.content = content


class BetaBuiltinFunctionTool(ABC):
    @abstractmethod
    def to_dict(self) -> Dict[str, Any]: ...

    @abstractmethod
    def call(self, input: object) -> BetaFunctionToolResultType: ...

    @property
    def name(self) -> str:
        raw = self.to_dict()
        if "mcp_server_name" in raw:
            return raw["mcp_server_name"]
        return raw["name"]


class BetaAsyncBuiltinFunctionTool(ABC):
    @abstractmethod
    def to_dict(self) -> Dict[str, Any]: ...

    @abstractmethod
    async def call(self, input: object) -> BetaFunctionToolResultType: ...

    @property
    def name(self) -> str:
        raw = self.to_dict()
        if "mcp_server_name" in raw:
            return raw["mcp_server_name"]
        return raw["name"]


class BetaAbstractMemoryTool(BetaBuiltinFunctionTool):
    def __init__(self, *, cache_control: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self._cache_control = cache_control

    def to_dict(self) -> Dict[str, Any]:
        param: Dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
        if self._cache_control is not None:
            param["cache_control"] = self._cache_control
        return param

    def call(self, input: object) -> BetaFunctionToolResultType:
        return self.execute(command_from_input(input))

    def execute(self, command: Any) -> BetaFunctionToolResultType:
        handler = {"view": self.view, "create": self.create, "str_replace": self.str_replace,
                   "insert": self.insert, "delete": self.delete, "rename": self.rename}
        if command.command not in handler:
            raise NotImplementedError(f"Unknown command: {command.command}")
        return handler[command.command](command)

    @abstractmethod
    def view(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    def create(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    def str_replace(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    def insert(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    def delete(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    def rename(self, command: Any) -> BetaFunctionToolResultType: ...

    def clear_all_memory(self) -> BetaFunctionToolResultType:
        raise NotImplementedError("clear_all_memory not implemented")


class BetaAsyncAbstractMemoryTool(BetaAsyncBuiltinFunctionTool):
    def __init__(self, *, cache_control: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self._cache_control = cache_control

    def to_dict(self) -> Dict[str, Any]:
        param: Dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
        if self._cache_control is not None:
            param["cache_control"] = self._cache_control
        return param

    async def call(self, input: object) -> BetaFunctionToolResultType:
        return await self.execute(command_from_input(input))

    async def execute(self, command: Any) -> BetaFunctionToolResultType:
        handler = {"view": self.view, "create": self.create, "str_replace": self.str_replace,
                   "insert": self.insert, "delete": self.delete, "rename": self.rename}
        if command.command not in handler:
            raise NotImplementedError(f"Unknown command: {command.command}")
        return await handler[command.command](command)

    @abstractmethod
    async def view(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    async def create(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    async def str_replace(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    async def insert(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    async def delete(self, command: Any) -> BetaFunctionToolResultType: ...

    @abstractmethod
    async def rename(self, command: Any) -> BetaFunctionToolResultType: ...

    async def clear_all_memory(self) -> BetaFunctionToolResultType:
        raise NotImplementedError("clear_all_memory not implemented")


__all__ = ["ToolError", "BetaBuiltinFunctionTool", "BetaAsyncBuiltinFunctionTool",
           "BetaFunctionToolResultType", "BetaAbstractMemoryTool", "BetaAsyncAbstractMemoryTool"]
