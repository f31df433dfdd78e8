"""Conformance functions for `shellgate eval` (area: projection B, C and display)."""

from __future__ import annotations

from typing import Any

from shellgate.router import policy_projection as pp
from shellgate.router.approval_identity import canonicalize_command_for_approval
from shellgate.router.cli.conformance import EvalFailure, EvalFn
from shellgate.router.display.parse_command import (
    ListFiles,
    ParsedCommand,
    Read,
    Search,
    is_small_formatting_command,
    parse_command,
)


def _argv(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise EvalFailure("input must be an array of strings")
    return value


def _script(value: Any) -> str:
    if not isinstance(value, str):
        raise EvalFailure("input must be a string")
    return value


def _extract_bash_command(value: Any) -> Any:
    found = pp.extract_bash_command(_argv(value))
    return None if found is None else list(found)


def _commands_for_exec_policy(value: Any) -> Any:
    projection = pp.commands_for_exec_policy(_argv(value))
    return {
        "commands": [list(command) for command in projection.commands],
        "used_complex_parsing": projection.used_complex_parsing,
        "command_origin": projection.command_origin.value,
    }


def parsed_command_json(parsed: ParsedCommand) -> dict[str, Any]:
    """The vector shape of one display record."""
    if isinstance(parsed, Read):
        return {"type": "read", "cmd": parsed.cmd, "name": parsed.name, "path": parsed.path}
    if isinstance(parsed, ListFiles):
        return {"type": "list_files", "cmd": parsed.cmd, "path": parsed.path}
    if isinstance(parsed, Search):
        return {"type": "search", "cmd": parsed.cmd, "query": parsed.query, "path": parsed.path}
    return {"type": "unknown", "cmd": parsed.cmd}


FUNCTIONS: dict[str, EvalFn] = {
    "extract_bash_command": _extract_bash_command,
    "extract_powershell_command": lambda v: pp.extract_powershell_command(_argv(v)),
    "parse_plain_shell_script": lambda v: pp.parse_plain_shell_script(_script(v)),
    "parse_shell_lc_plain_commands": lambda v: pp.parse_shell_lc_plain_commands(_argv(v)),
    "parse_shell_lc_single_command_prefix": lambda v: pp.parse_shell_lc_single_command_prefix(
        _argv(v)
    ),
    "parse_shell_lc_literal_commands": lambda v: pp.parse_shell_lc_literal_commands(_argv(v)),
    "commands_for_exec_policy": _commands_for_exec_policy,
    "canonicalize_command_for_approval": lambda v: canonicalize_command_for_approval(_argv(v)),
    "parse_command": lambda v: [parsed_command_json(p) for p in parse_command(_argv(v))],
    "is_small_formatting_command": lambda v: is_small_formatting_command(_argv(v)),
}
