"""libmemtool through ctypes: finding the library and the C declarations.

Everything here mirrors include/memtool.h exactly; nothing else in the
package touches ctypes declarations.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import threading
from ctypes import (POINTER, Structure, c_char, c_char_p, c_int, c_int64, c_size_t, c_uint,
                    c_uint64, c_void_p)
from typing import List, Optional, Tuple

from ._errors import LibraryNotFoundError

#: The mt_options layout this binding writes (MT_OPTIONS_VERSION in memtool.h).
#: A newer library reads an older version's fields and defaults the rest; to
#: use a newer version, add its fields at the end of _Options._fields_ and
#: raise this number.
OPTIONS_VERSION = 5

#: Room left after _Options for mt_options_init, which fills the library's own
#: (possibly newer, larger) struct.
_OPTIONS_SLACK = 512


class _Error(Structure):
    _fields_ = [("code", c_int), ("message", c_char_p)]


class _Options(Structure):
    _fields_ = [
        ("version", c_uint),
        ("max_file_size", c_uint64),
        ("max_store_size", c_uint64),
        ("max_files", c_uint64),
        ("view_limit", c_uint64),
        ("durability", c_int),
        # version 2
        ("max_dirs", c_uint64),
        ("lock_timeout_ms", c_uint),
        # version 3
        ("actor", c_char_p),
        ("history", c_int),
        ("history_keep", c_uint),
        ("history_days", c_uint),
        ("audit", c_char_p),
        # version 4
        ("tenant", c_char_p),
        # version 5
        ("secrets", c_int),
        ("secrets_allow", POINTER(c_char_p)),
        ("secrets_allow_count", c_size_t),
    ]


class _Result(Structure):
    _fields_ = [("text", c_void_p), ("len", c_size_t), ("is_error", c_int)]


class _Usage(Structure):
    _fields_ = [("bytes", c_uint64), ("files", c_uint64), ("dirs", c_uint64)]


class _Version(Structure):
    _fields_ = [
        ("id", c_int64),
        ("memory_id", c_char * 24),
        ("operation", c_int),
        ("path", c_char_p),
        ("previous_path", c_char_p),
        ("actor", c_char_p),
        ("created_at", c_int64),
        ("content_sha256", c_char * 65),
        ("content_size", c_uint64),
        ("redacted", c_int),
    ]


class _LogQuery(Structure):
    _fields_ = [
        ("path", c_char_p),
        ("memory_id", c_char_p),
        ("operation", c_int),
        ("actor", c_char_p),
        ("since", c_int64),
        ("until", c_int64),
        ("before_id", c_int64),
        ("limit", c_size_t),
    ]


class _SearchHit(Structure):
    _fields_ = [
        ("path", c_char_p),
        ("score", ctypes.c_double),
        ("lines", POINTER(ctypes.c_uint32)),
        ("line_count", c_size_t),
        ("more_lines", c_int),
        ("matches", c_uint64),
        ("line", ctypes.c_uint32),
        ("before", c_char_p),
        ("match", c_char_p),
        ("after", c_char_p),
    ]


class _SearchOptions(Structure):
    _fields_ = [("path", c_char_p), ("limit", c_size_t)]


_P = c_void_p  # mt_memory *

_SIGNATURES = {
    "mt_error_last": (POINTER(_Error), []),
    "mt_options_init": (None, [c_void_p]),
    "mt_memory_open": (c_int, [POINTER(c_void_p), c_char_p, c_void_p]),
    "mt_memory_open_url": (c_int, [POINTER(c_void_p), c_char_p, c_void_p]),
    "mt_memory_free": (None, [_P]),
    "mt_memory_call": (c_int, [POINTER(_Result), _P, c_char_p, c_size_t]),
    "mt_result_dispose": (None, [POINTER(_Result)]),
    "mt_memory_usage": (c_int, [POINTER(_Usage), _P]),
    "mt_memory_log": (c_int, [POINTER(POINTER(_Version)), POINTER(c_size_t), _P,
                              POINTER(_LogQuery)]),
    "mt_versions_free": (None, [POINTER(_Version), c_size_t]),
    "mt_memory_version": (c_int, [POINTER(_Version), _P, c_int64]),
    "mt_version_dispose": (None, [POINTER(_Version)]),
    "mt_memory_version_content": (c_int, [POINTER(c_void_p), POINTER(c_size_t), _P, c_int64]),
    "mt_memory_restore": (c_int, [POINTER(c_int64), _P, c_int64]),
    "mt_memory_undo": (c_int, [POINTER(c_int64), POINTER(c_int64), _P, c_char_p]),
    "mt_memory_redact": (c_int, [_P, c_int64]),
    "mt_memory_read": (c_int, [POINTER(c_void_p), POINTER(c_size_t), _P, c_char_p]),
    "mt_memory_sha256": (c_int, [c_char * 65, _P, c_char_p]),
    "mt_memory_history_warning": (c_char_p, [_P]),
    "mt_memory_set_actor": (c_int, [_P, c_char_p]),
    "mt_memory_search": (c_int, [POINTER(POINTER(_SearchHit)), POINTER(c_size_t), _P, c_char_p,
                                 POINTER(_SearchOptions)]),
    "mt_search_hits_free": (None, [POINTER(_SearchHit), c_size_t]),
}


def _pkg_config_libdir() -> Tuple[Optional[str], str]:
    """libdir from pkg-config, and what happened (for the error)."""
    exe = shutil.which("pkg-config")
    if not exe:
        return None, "pkg-config is not installed"
    try:
        r = subprocess.run([exe, "--variable=libdir", "memtool"], capture_output=True, text=True,
                           timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "pkg-config failed: %s" % e
    libdir = r.stdout.strip()
    if r.returncode != 0 or not libdir:
        return None, "pkg-config knows no package memtool (is memtool.pc on PKG_CONFIG_PATH?)"
    return libdir, "pkg-config gave libdir %s" % libdir


def _candidates() -> Tuple[List[str], List[str]]:
    """Where to look, in order, and what each source said."""
    paths, notes = [], []
    env = os.environ.get("MEMTOOL_LIBRARY")
    if env:
        paths.append(env)
        notes.append("MEMTOOL_LIBRARY=%s" % env)
    else:
        notes.append("MEMTOOL_LIBRARY is not set")
    libdir, note = _pkg_config_libdir()
    notes.append(note)
    if libdir:
        for name in ("libmemtool.so", "libmemtool.so.0"):
            paths.append(os.path.join(libdir, name))
    found = ctypes.util.find_library("memtool")
    if found:
        paths.append(found)
        notes.append("the standard library path has %s" % found)
    else:
        notes.append("ctypes.util.find_library('memtool') found nothing on the standard "
                     "library path")
    return paths, notes


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_libc: Optional[ctypes.CDLL] = None


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load() -> ctypes.CDLL:
    """libmemtool, loaded once: MEMTOOL_LIBRARY, then pkg-config's libdir, then
    the standard library path."""
    global _lib, _libc
    with _lock:
        if _lib is not None:
            return _lib
        paths, notes = _candidates()
        tried = []
        for p in paths:
            try:
                lib = ctypes.CDLL(p)
                _declare(lib)
            except (OSError, AttributeError) as e:
                tried.append("%s: %s" % (p, e))
                if p == os.environ.get("MEMTOOL_LIBRARY"):
                    # An explicit choice that does not load is an error, not a hint.
                    raise LibraryNotFoundError(
                        "MEMTOOL_LIBRARY=%s cannot be loaded as libmemtool: %s" % (p, e)) from e
                continue
            _libc = ctypes.CDLL(None)
            _libc.free.restype = None
            _libc.free.argtypes = [c_void_p]
            _lib = lib
            return lib
        raise LibraryNotFoundError(
            "libmemtool was not found. Set MEMTOOL_LIBRARY to the path of libmemtool.so, or "
            "install memtool so that `pkg-config --variable=libdir memtool` names its directory, "
            "or put libmemtool.so on the standard library path (ldconfig). Looked at: "
            + "; ".join(notes + tried))


def free(ptr: int) -> None:
    """free(3) for what the library malloc'd for the caller."""
    assert _libc is not None
    _libc.free(ptr)


def new_options() -> Tuple[_Options, ctypes.Array]:
    """mt_options with the library's defaults, set to OPTIONS_VERSION. The
    buffer is larger than _Options so that a newer library's mt_options_init
    (which fills its own, larger struct) writes inside it."""
    lib = load()
    buf = (c_char * (ctypes.sizeof(_Options) + _OPTIONS_SLACK))()
    lib.mt_options_init(ctypes.cast(buf, c_void_p))
    opts = _Options.from_buffer(buf)
    opts.version = OPTIONS_VERSION
    return opts, buf
