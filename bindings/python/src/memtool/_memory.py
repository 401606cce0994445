"""memtool.Memory: one open store, shared by any number of threads."""
from __future__ import annotations

import ctypes
import datetime
import json
import os
import re
import threading
from ctypes import byref, c_char, c_int64, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _lib
from ._errors import ClosedError, error_for

StoreSpec = Union[str, "os.PathLike[str]"]

_OPERATIONS = {1: "created", 2: "modified", 3: "deleted"}
_OPERATION_CODES = {v: k for k, v in _OPERATIONS.items()}
_DURABILITY = {"full": 0, "file": 1, "none": 2}
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Result:
    """A tool result: its exact text, and whether it is an error."""

    text: str
    is_error: bool


@dataclass(frozen=True)
class Usage:
    """What a store holds, as its limits count it."""

    bytes: int
    files: int
    dirs: int


@dataclass(frozen=True)
class Version:
    """One version of a memory (memtool.h, mt_version)."""

    id: int
    memory_id: str
    operation: str  # "created", "modified" or "deleted"
    path: Optional[str]  # None when redacted
    previous_path: Optional[str]  # a rename's former path
    actor: str
    created_at: int  # milliseconds since the epoch (UTC)
    content_sha256: str  # "" for a deletion or when redacted
    content_size: int
    redacted: bool

    @property
    def time(self) -> datetime.datetime:
        """created_at as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.created_at / 1000, datetime.timezone.utc)


def _text(name: str, value: Any) -> bytes:
    """A str argument as the C string the library takes."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))
    if "\0" in value:
        raise ValueError("%s must not contain a NUL character" % name)
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("%s is not valid Unicode text (%s)" % (name, e.reason)) from None


def _opt_text(name: str, value: Any) -> Optional[bytes]:
    return None if value is None else _text(name, value)


def _int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if value < lo or value > hi:
        raise ValueError("%s must be between %d and %d, not %d" % (name, lo, hi, value))
    return value


_U32 = 2**32 - 1
_SECRETS = {"reject": 0, "redact": 1, "off": 2}
_U64 = 2**64 - 1
_I64 = 2**63 - 1


def _version_id(value: Any) -> int:
    return _int("version id", value, 1, _I64)


def _json_kind(value: Any) -> str:
    """What a decoded JSON scalar is, in the library's words (mt_json_kind)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    raise TypeError("a tool input is a JSON value, not %s" % type(value).__name__)


def encode_input(value: Any) -> bytes:
    """A tool input as JSON text for the library. A str holding a lone
    surrogate (JSON's "\\ud800" read by json.loads) goes as an escape, which
    the library reads as U+FFFD, as it does every lone surrogate."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError("the tool input cannot be sent as JSON: %s" % e) from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")


@dataclass(frozen=True)
class SearchHit:
    """A memory a search found: where, how well, and the first match."""
    path: str
    score: float
    lines: List[int]
    more_lines: bool
    matches: int
    line: int
    before: Optional[str]
    match: Optional[str]
    after: Optional[str]


class Memory:
    """A memtool store, open: run tool inputs and read and change history.

    ``store`` is a URL (``file:DIR``, ``sqlite:PATH``, ``postgresql://USER@HOST/DB``
    or any libpq connection string after ``postgresql:``), or a directory for the
    file store: a ``str`` path that does not start with a scheme (``"./memory"``,
    as ``memtool --root`` takes it) or a ``pathlib.Path`` (an ``os.PathLike``).
    A path whose first component holds a colon is written ``"./a:b"``. The keyword
    arguments are mt_options (memtool.h); None leaves the library's default.

    A Memory may be used from any number of threads at once; the library does
    the work outside the GIL. close() waits for the calls under way and then
    frees the handle; calls after it raise ClosedError.
    """

    def __init__(self, store: StoreSpec, *, tenant: Optional[str] = None,
                 actor: Optional[str] = None, max_file_size: Optional[int] = None,
                 max_store_size: Optional[int] = None, max_files: Optional[int] = None,
                 max_dirs: Optional[int] = None, view_limit: Optional[int] = None,
                 lock_timeout: Optional[float] = None, durability: Optional[str] = None,
                 history: Optional[bool] = None, history_keep: Optional[int] = None,
                 history_days: Optional[int] = None,
                 audit: Optional[Union[str, "os.PathLike[str]"]] = None,
                 secrets: Optional[str] = None,
                 secrets_allow: Optional[List[str]] = None) -> None:
        self._handle: Optional[int] = None
        self._busy = 0
        self._cond = threading.Condition()
        if store is None:
            raise TypeError("store is required: a URL (file:DIR, sqlite:PATH, "
                            "postgresql://USER@HOST/DB) or the path of a directory")
        lib = _lib.load()
        opts, buf = _lib.new_options()
        for name, value in (("max_file_size", max_file_size), ("max_store_size", max_store_size),
                            ("max_files", max_files), ("max_dirs", max_dirs),
                            ("view_limit", view_limit)):
            if value is not None:
                setattr(opts, name, _int(name, value, 0, _U64))
        if lock_timeout is not None:
            if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)):
                raise TypeError("lock_timeout must be a number of seconds, not %s"
                                % type(lock_timeout).__name__)
            if not 0 <= lock_timeout <= _U32 / 1000:
                raise ValueError("lock_timeout must be between 0 and %d seconds, not %r"
                                 % (_U32 // 1000, lock_timeout))
            opts.lock_timeout_ms = int(round(lock_timeout * 1000))
        if durability is not None:
            if not isinstance(durability, str):
                raise TypeError("durability must be a str, not %s" % type(durability).__name__)
            if durability not in _DURABILITY:
                raise ValueError("durability must be 'full', 'file' or 'none', not %r"
                                 % durability)
            opts.durability = _DURABILITY[durability]
        if history is not None:
            if not isinstance(history, bool):
                raise TypeError("history must be a bool, not %s" % type(history).__name__)
            opts.history = int(history)
        if history_keep is not None:
            opts.history_keep = _int("history_keep", history_keep, 0, _U32)
        if history_days is not None:
            opts.history_days = _int("history_days", history_days, 0, _U32)
        if actor is not None:
            opts.actor = _text("actor", actor)
        if tenant is not None:
            opts.tenant = _text("tenant", tenant)
        if audit is not None:
            if not isinstance(audit, (str, os.PathLike)):
                raise TypeError("audit must be a path, not %s" % type(audit).__name__)
            opts.audit = _text("audit", os.fspath(audit))
        if secrets is not None:
            if not isinstance(secrets, str):
                raise TypeError("secrets must be a str, not %s" % type(secrets).__name__)
            if secrets not in _SECRETS:
                raise ValueError("secrets must be 'reject', 'redact' or 'off', not %r" % secrets)
            opts.secrets = _SECRETS[secrets]
        if secrets_allow is not None:
            if isinstance(secrets_allow, str) or not isinstance(secrets_allow, (list, tuple)):
                raise TypeError("secrets_allow must be a list of regex strings, not %s"
                                % type(secrets_allow).__name__)
            allow = (ctypes.c_char_p * max(1, len(secrets_allow)))(
                *[_text("secrets_allow item", r) for r in secrets_allow])
            opts.secrets_allow = ctypes.cast(allow, ctypes.POINTER(ctypes.c_char_p))
            opts.secrets_allow_count = len(secrets_allow)
        out = c_void_p()
        popts = ctypes.cast(buf, c_void_p)
        if isinstance(store, os.PathLike):
            path = os.fspath(store)
            if not isinstance(path, str):
                raise TypeError("store must be a str URL or a str path, not bytes")
            rc = lib.mt_memory_open(byref(out), _text("store", path), popts)
        elif isinstance(store, str):
            if not store:
                raise ValueError("store is empty: give a directory ('./memory'), or a URL "
                                 "('file:DIR', 'sqlite:PATH', 'postgresql://USER@HOST/DATABASE')")
            # A plain path is a directory, as `memtool --root` takes it (the SDK
            # helper's base_path was one); anything with a scheme is a URL.
            if _SCHEME.match(store):
                rc = lib.mt_memory_open_url(byref(out), _text("store", store), popts)
            else:
                rc = lib.mt_memory_open(byref(out), _text("store", store), popts)
        else:
            raise TypeError("store must be a URL or a path (str or pathlib.Path), not %s"
                            % type(store).__name__)
        self._raise_if(rc)
        self._handle = out.value
        self._store = store

    # ---- the handle's life ----

    @staticmethod
    def _raise_if(rc: int) -> None:
        if rc < 0:
            err = _lib.load().mt_error_last().contents
            raise error_for(err.code, err.message.decode("utf-8", "replace"))

    def _enter(self) -> int:
        with self._cond:
            if self._handle is None:
                raise ClosedError("this memtool.Memory is closed")
            self._busy += 1
            return self._handle

    def _leave(self) -> None:
        with self._cond:
            self._busy -= 1
            if self._busy == 0:
                self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Free the handle once the calls under way have returned. Idempotent."""
        with self._cond:
            handle = self._handle
            if handle is None:
                return
            self._handle = None
            while self._busy:
                self._cond.wait()
        _lib.load().mt_memory_free(handle)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if getattr(self, "_handle", None) is not None and not self._busy:
                self.close()
        except Exception:  # interpreter shutdown: the process frees everything
            pass

    def __repr__(self) -> str:
        return "<memtool.Memory %r%s>" % (getattr(self, "_store", None),
                                          " closed" if self.closed else "")

    # ---- tool calls ----

    def call_json(self, data: Union[str, bytes]) -> Result:
        """Run one tool input given as JSON text; its result, exactly."""
        if isinstance(data, str):
            try:
                data = data.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError("the input is not valid Unicode text (%s)" % e.reason) from None
        elif not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("call_json takes JSON text (str or bytes), not %s"
                            % type(data).__name__)
        data = bytes(data)
        lib = _lib.load()
        res = _lib._Result()
        handle = self._enter()
        try:
            rc = lib.mt_memory_call(byref(res), handle, data, len(data))
            self._raise_if(rc)
        finally:
            self._leave()
        try:
            text = ctypes.string_at(res.text, res.len).decode("utf-8")
            return Result(text, bool(res.is_error))
        finally:
            lib.mt_result_dispose(byref(res))

    def call(self, input: Mapping[str, Any]) -> Result:
        """Run one tool input ({"command": "view", "path": "/memories"})."""
        if not isinstance(input, Mapping):
            raise TypeError("a tool input is a mapping such as {'command': 'view', 'path': "
                            "'/memories'}, not %s" % type(input).__name__)
        return self.call_json(encode_input(dict(input)))

    def call_value(self, value: Any) -> Result:
        """Run a decoded JSON value as a tool input, as a tool_use block's
        input: anything but an object gets the library's error result."""
        if isinstance(value, Mapping):
            return self.call(value)
        if isinstance(value, (list, tuple)):
            return self.call_json(encode_input(list(value)))
        kind = _json_kind(value)
        return Result("Error: The tool input must be a JSON object, not %s" % kind, True)

    def tool_result(self, block: Mapping[str, Any]) -> Dict[str, Any]:
        """Answer a Messages API tool_use block (or a bare tool input) with a
        tool_result block, as mt_memory_tool_result does."""
        if not isinstance(block, Mapping):
            raise TypeError("a tool_use block is a mapping, not %s" % type(block).__name__)
        block_id = None
        if "type" in block:
            block_id = block.get("id")
            if block["type"] != "tool_use":
                res = Result("Error: Expected a tool input or a tool_use block, got a block of "
                             "another type", True)
            elif "name" in block and block["name"] != "memory":
                res = Result("Error: This tool_use block is not for the memory tool (its name "
                             "is not \"memory\")", True)
            elif "input" not in block:
                res = Result("Error: The tool_use block has no `input`", True)
            else:
                res = self.call_value(block["input"])
        else:
            res = self.call_json(encode_input(dict(block)))
        out: Dict[str, Any] = {"type": "tool_result"}
        if isinstance(block_id, str):
            out["tool_use_id"] = block_id
        out["content"] = res.text
        out["is_error"] = res.is_error
        return out

    # ---- reading the store ----

    def _bytes_out(self, fn: Any, *args: Any) -> bytes:
        ptr, size = c_void_p(), c_size_t()
        handle = self._enter()
        try:
            self._raise_if(fn(byref(ptr), byref(size), handle, *args))
        finally:
            self._leave()
        try:
            return ctypes.string_at(ptr, size.value) if size.value else b""
        finally:
            _lib.free(ptr)

    def read(self, path: str) -> bytes:
        """The exact content of the memory at path now ("/memories/notes.md")."""
        return self._bytes_out(_lib.load().mt_memory_read, _text("path", path))

    def sha256(self, path: str) -> str:
        """The SHA-256 (lowercase hex) of the memory at path now."""
        out = (c_char * 65)()
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_sha256(out, handle, _text("path", path)))
        finally:
            self._leave()
        return out.value.decode("ascii")

    def usage(self) -> Usage:
        u = _lib._Usage()
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_usage(byref(u), handle))
        finally:
            self._leave()
        return Usage(u.bytes, u.files, u.dirs)

    # ---- search ----

    def search(self, query: str, *, path: Optional[str] = None,
               limit: Optional[int] = None) -> List[SearchHit]:
        """Memories holding every term of query (words, "phrases", prefix*),
        best first, at or beneath the directory path (default /memories), at
        most limit (1 to 100, default 10)."""
        opts = _lib._SearchOptions()
        q = _text("query", query)
        opts.path = _opt_text("path", path)
        if limit is not None:
            opts.limit = _int("limit", limit, 1, 100)
        lib = _lib.load()
        arr = ctypes.POINTER(_lib._SearchHit)()
        count = c_size_t()
        handle = self._enter()
        try:
            self._raise_if(lib.mt_memory_search(byref(arr), byref(count), handle, q, byref(opts)))
        finally:
            self._leave()

        def s(b: Optional[bytes]) -> Optional[str]:
            return None if b is None else b.decode("utf-8", "replace")

        try:
            return [SearchHit(path=s(h.path) or "", score=h.score,
                              lines=[h.lines[k] for k in range(h.line_count)],
                              more_lines=bool(h.more_lines), matches=h.matches, line=h.line,
                              before=s(h.before), match=s(h.match), after=s(h.after))
                    for h in (arr[i] for i in range(count.value))]
        finally:
            lib.mt_search_hits_free(arr, count)

    # ---- history ----

    @staticmethod
    def _version(v: "_lib._Version") -> Version:
        def s(b: Optional[bytes]) -> Optional[str]:
            return None if b is None else b.decode("utf-8", "replace")

        return Version(id=v.id, memory_id=v.memory_id.decode("ascii"),
                       operation=_OPERATIONS.get(v.operation, str(v.operation)),
                       path=s(v.path), previous_path=s(v.previous_path),
                       actor=s(v.actor) or "", created_at=v.created_at,
                       content_sha256=v.content_sha256.decode("ascii"),
                       content_size=v.content_size, redacted=bool(v.redacted))

    def log(self, path: Optional[str] = None, *, memory_id: Optional[str] = None,
            operation: Optional[str] = None, actor: Optional[str] = None,
            since: Optional[int] = None, until: Optional[int] = None,
            before_id: Optional[int] = None, limit: Optional[int] = None) -> List[Version]:
        """Versions, newest first: of a memory or everything beneath a
        directory (path), by memory_id, operation ("created", "modified",
        "deleted"), actor, created_at bounds in ms (since, until, inclusive),
        older than before_id, at most limit (default 100)."""
        q = _lib._LogQuery()
        q.path = _opt_text("path", path)
        q.memory_id = _opt_text("memory_id", memory_id)
        q.actor = _opt_text("actor", actor)
        if operation is not None:
            if operation not in _OPERATION_CODES:
                raise ValueError("operation must be 'created', 'modified' or 'deleted', not %r"
                                 % (operation,))
            q.operation = _OPERATION_CODES[operation]
        if since is not None:
            q.since = _int("since", since, 0, _I64)
        if until is not None:
            q.until = _int("until", until, 0, _I64)
        if before_id is not None:
            q.before_id = _int("before_id", before_id, 0, _I64)
        if limit is not None:
            q.limit = _int("limit", limit, 1, 2**31)
        lib = _lib.load()
        arr = ctypes.POINTER(_lib._Version)()
        count = c_size_t()
        handle = self._enter()
        try:
            self._raise_if(lib.mt_memory_log(byref(arr), byref(count), handle, byref(q)))
        finally:
            self._leave()
        try:
            return [self._version(arr[i]) for i in range(count.value)]
        finally:
            lib.mt_versions_free(arr, count)

    def version(self, id: int) -> Version:
        """One version."""
        lib = _lib.load()
        v = _lib._Version()
        handle = self._enter()
        try:
            self._raise_if(lib.mt_memory_version(byref(v), handle, _version_id(id)))
        finally:
            self._leave()
        try:
            return self._version(v)
        finally:
            lib.mt_version_dispose(byref(v))

    def version_content(self, id: int) -> bytes:
        """A version's exact content."""
        return self._bytes_out(_lib.load().mt_memory_version_content, _version_id(id))

    def restore(self, id: int) -> int:
        """Make a version's content the memory's current content again, as a
        new version; returns the new version's id, or 0 when the memory held
        that content already (nothing changed, no version recorded)."""
        out = c_int64()
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_restore(byref(out), handle, _version_id(id)))
        finally:
            self._leave()
        return out.value

    def undo(self, path: str) -> Tuple[int, int]:
        """Restore the memory at (or last at) path to its latest earlier
        version whose content differs from its current content: (the new
        version's id, the version restored)."""
        out, restored = c_int64(), c_int64()
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_undo(byref(out), byref(restored), handle,
                                                      _text("path", path)))
        finally:
            self._leave()
        return out.value, restored.value

    def redact(self, id: int) -> None:
        """Erase a version's content, path and indexed words (PostgreSQL: then store vacuum)."""
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_redact(handle, _version_id(id)))
        finally:
            self._leave()

    @property
    def history_warning(self) -> Optional[str]:
        """Why the handle's last change recorded no version, or None."""
        handle = self._enter()
        try:
            w = _lib.load().mt_memory_history_warning(handle)
        finally:
            self._leave()
        return None if w is None else w.decode("utf-8", "replace")

    def set_actor(self, actor: str) -> None:
        """Who the handle's changes are recorded as from now on."""
        handle = self._enter()
        try:
            self._raise_if(_lib.load().mt_memory_set_actor(handle, _text("actor", actor)))
        finally:
            self._leave()
