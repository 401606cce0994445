"""run.py --via python: a golden case's tool calls through the Python binding,
in process, instead of `memtool call`.

The binding (bindings/python/src) is imported from the tree and finds
libmemtool through MEMTOOL_LIBRARY. A call runs as the SDK's tool runner would
run it: a tool input through MemtoolMemoryTool.call (its text, or ToolError
with the error's text), a tool_use block through Memory.tool_result, printed
as `memtool call` prints it (jansson's compact JSON). The store and the `@`
options are those `memtool call` would get: the same store, the options as
mt_options, and the command's actor (`cli`) unless one is given.
"""
import json
import os
import pathlib
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python", "src"))
import memtool  # noqa: E402

SIZES = {"K": 1024, "M": 1024**2, "G": 1024**3}
SIZE_OPTIONS = {"--max-file-size": "max_file_size", "--max-store-size": "max_store_size"}
COUNT_OPTIONS = {"--max-files": "max_files", "--max-dirs": "max_dirs",
                 "--view-limit": "view_limit", "--history-keep": "history_keep",
                 "--history-days": "history_days"}


class Unsupported(Exception):
    """A step the binding cannot take as `memtool call` does."""


def options(opts):
    """`@` words as Memory keyword arguments. Only valid values reach here:
    a case's invalid options are followed by `?` steps, which stay on the CLI."""
    out = {"actor": "cli"}
    words = list(opts)
    while words:
        name = words.pop(0)
        if not words:
            raise Unsupported("option %s has no value" % name)
        value = words.pop(0)
        if name in SIZE_OPTIONS:
            mult = SIZES.get(value[-1:].upper(), 1)
            out[SIZE_OPTIONS[name]] = int(value[:-1] if mult > 1 else value) * mult
        elif name in COUNT_OPTIONS:
            out[COUNT_OPTIONS[name]] = int(value)
        elif name == "--lock-timeout":
            out["lock_timeout"] = float(value)
        elif name in ("--actor", "--durability", "--tenant"):
            out[name[2:]] = value
        elif name == "--history":
            out["history"] = {"on": True, "off": False}[value]
        elif name == "--secrets":
            out["secrets"] = value
        elif name == "--secrets-allow":
            out.setdefault("secrets_allow", []).append(value)
        else:
            raise Unsupported("run.py --via python does not know the option %s" % name)
    return out


def jansson_string(s):
    """A JSON string as jansson's json_dumps writes it (raw UTF-8, \\uXXXX in
    upper case for the other control characters)."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
             "\t": "\\t"}
    out = []
    for ch in s:
        if ch in short:
            out.append(short[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def dump_result(block):
    """A tool_result block as `memtool call` prints it."""
    parts = []
    for k, v in block.items():
        text = ("true" if v else "false") if isinstance(v, bool) else jansson_string(v)
        parts.append(jansson_string(k) + ":" + text)
    return ("{" + ",".join(parts) + "}").encode("utf-8")


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Unsupported("duplicate keys (memtool call refuses them as usage)")
    return dict(pairs)


class Caller:
    """The binding on one case's store; a handle per set of `@` options, kept
    open across calls (as an application keeps it) while other processes
    change the store between them."""

    def __init__(self, sargs):
        if sargs[0] == "--root":
            self.store, self.extra = pathlib.Path(sargs[1]), {}
        else:
            self.store = sargs[1]
            self.extra = {"tenant": sargs[3]} if len(sargs) > 3 else {}
        self.opts = None
        self.tool = None

    def close(self):
        if self.tool is not None:
            self.tool.close()
            self.tool = None

    def call(self, opts, data):
        """(exit status as memtool call's, stdout) for one `>` or `!` input."""
        if self.tool is None or opts != self.opts:
            self.close()
            self.tool = memtool.MemtoolMemoryTool(store=self.store,
                                                  **dict(options(opts), **self.extra))
            self.opts = list(opts)
        try:
            value = json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicates)
        except (UnicodeDecodeError, ValueError) as e:
            raise Unsupported("not JSON Python reads: %s" % e)
        if not isinstance(value, dict):
            raise Unsupported("not a JSON object (memtool call refuses it as usage)")
        if "type" in value:
            block = self.tool.tool_result(value)
            return (1 if block["is_error"] else 0), dump_result(block)
        try:
            return 0, self.tool.call(value).encode("utf-8")
        except memtool.ToolError as e:
            return 1, e.content.encode("utf-8")
