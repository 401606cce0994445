"""Stand-ins for the SDK's memory command models
(src/anthropic/types/beta/beta_memory_tool_20250818_*_command.py): the
fields are the SDK's; to_dict() gives the fields that were set, under the
API's names, as the SDK's BaseModel.to_dict() does by default."""
from typing import Any, Dict


class _Command:
    fields: tuple = ("command",)

    def __init__(self, **values: Any) -> None:
        self._set = dict(values)
        for f in self.fields:
            setattr(self, f, values.get(f))

    def to_dict(self) -> Dict[str, Any]:
        return dict(self._set)


class BetaMemoryTool20250818ViewCommand(_Command):
    fields = ("command", "path", "view_range")


class BetaMemoryTool20250818CreateCommand(_Command):
    fields = ("command", "file_text", "path")


class BetaMemoryTool20250818StrReplaceCommand(_Command):
    fields = ("command", "new_str", "old_str", "path")


class BetaMemoryTool20250818InsertCommand(_Command):
    fields = ("command", "insert_line", "insert_text", "path")


class BetaMemoryTool20250818DeleteCommand(_Command):
    fields = ("command", "path")


class BetaMemoryTool20250818RenameCommand(_Command):
    fields = ("command", "new_path", "old_path")


_BY_NAME = {"view": BetaMemoryTool20250818ViewCommand,
            "create": BetaMemoryTool20250818CreateCommand,
            "str_replace": BetaMemoryTool20250818StrReplaceCommand,
            "insert": BetaMemoryTool20250818InsertCommand,
            "delete": BetaMemoryTool20250818DeleteCommand,
            "rename": BetaMemoryTool20250818RenameCommand}


def command_from_input(input: Any) -> _Command:
    """What the SDK's construct_type_unchecked does with a tool input: a
    command model chosen by its `command`, without validation."""
    values = dict(input) if isinstance(input, dict) else {}
    return _BY_NAME.get(values.get("command"), _Command)(**values)
