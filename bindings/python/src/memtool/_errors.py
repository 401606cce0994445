"""The exceptions: MemtoolError for what the library refused, ToolError for a
tool result that is an error (the tool runner turns it into is_error: true)."""
from __future__ import annotations

from typing import Dict, Type

try:  # The SDK's runner gives a ToolError's content to the model as it is.
    from anthropic.lib.tools import ToolError as _ToolErrorBase  # type: ignore
except ImportError:  # no SDK: a plain exception with the same shape
    _ToolErrorBase = Exception  # type: ignore[misc,assignment]


class MemtoolError(Exception):
    """The library refused a call. `code` is the mt_error_code (negative)."""

    code: int

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LibraryNotFoundError(MemtoolError, OSError):
    """libmemtool could not be found or loaded."""


class ClosedError(MemtoolError, ValueError):
    """The handle was closed."""


class NotFoundError(MemtoolError):
    """Nothing at that path, or no such version (MT_ENOTFOUND)."""


class ExistsError(MemtoolError):
    """Something is already there (MT_EEXISTS)."""


class LimitError(MemtoolError):
    """A configured limit would be exceeded (MT_ELIMIT)."""


class BusyError(MemtoolError):
    """The store's lock was not free in time (MT_EBUSY)."""


class ConflictError(MemtoolError):
    """The content changed meanwhile (MT_ECONFLICT)."""


class NotSupportedError(MemtoolError):
    """The store or kernel lacks what this needs (MT_ENOSYS, MT_EUNSUPPORTED)."""


class InvalidArgumentError(MemtoolError, ValueError):
    """A bad argument or option (MT_EINVAL)."""


_BY_CODE: Dict[int, Type[MemtoolError]] = {
    -3: InvalidArgumentError,
    -4: NotFoundError,
    -5: ExistsError,
    -9: NotSupportedError,
    -10: LimitError,
    -12: NotSupportedError,
    -13: BusyError,
    -16: ConflictError,
}


def error_for(code: int, message: str) -> MemtoolError:
    return _BY_CODE.get(code, MemtoolError)(message, code)


class ToolError(_ToolErrorBase):  # type: ignore[valid-type,misc]
    """A tool result with is_error set: `content` (and str(e)) is its exact text.

    With the SDK installed this is a subclass of anthropic.lib.tools.ToolError,
    so the tool runner sends `content` back to the model as the error result."""

    content: str

    def __init__(self, content: str) -> None:
        super().__init__(content)
        self.content = content
