"""Exact tool JSON of `shell_command`, `exec_command`, `write_stdin`, `apply_patch` (spec 01 §4).

Dict insertion order is the wire key order: tool keys `type, name, description, strict,
parameters`; parameters `type, properties, required, additionalProperties`; properties sorted
by name; inside a property `type, description`, then `enum` / `items` / `properties` +
`additionalProperties`. Numbers are typed `number`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

WINDOWS_SAFETY_RULES: Final = (
    "Windows safety rules:\n"
    "- Do not compose destructive filesystem commands across shells. Do not enumerate paths in "
    "PowerShell and then pass them to `cmd /c`, batch builtins, or another shell for deletion or "
    "moving. Use one shell end-to-end, prefer native PowerShell cmdlets such as `Remove-Item` / "
    "`Move-Item` with `-LiteralPath`, and avoid string-built shell commands for file operations.\n"
    "- Before any recursive delete or move on Windows, verify the resolved absolute target paths "
    "stay within the intended workspace or explicitly named target directory. Never issue a "
    "recursive delete or move against a computed path if the final target has not been checked.\n"
    "- When using `Start-Process` to launch a background helper or service, pass `-WindowStyle "
    "Hidden` unless the user explicitly asked for a visible interactive window. Use visible "
    "windows only for interactive tools the user needs to see or control."
)

SHELL_COMMAND_DESCRIPTION: Final = (
    "Runs a shell command and returns its output.\n"
    "- Always set the `workdir` param when using the shell_command function. Do not use `cd` "
    "unless absolutely necessary."
)
SHELL_COMMAND_DESCRIPTION_WINDOWS: Final = (
    "Runs a Powershell command (Windows) and returns its output.\n\n"
    "Examples of valid command strings:\n\n"
    '- ls -a (show hidden): "Get-ChildItem -Force"\n'
    '- recursive find by name: "Get-ChildItem -Recurse -Filter *.py"\n'
    '- recursive grep: "Get-ChildItem -Path C:\\\\myrepo -Recurse | Select-String -Pattern '
    "'TODO' -CaseSensitive\"\n"
    "- ps aux | grep python: \"Get-Process | Where-Object { $_.ProcessName -like '*python*' }\"\n"
    "- setting an env var: \"$env:FOO='bar'; echo $env:FOO\"\n"
    "- running an inline Python script: \"@'\\\\nprint('Hello, world!')\\\\n'@ | python -\"\n\n"
    + WINDOWS_SAFETY_RULES
)
EXEC_COMMAND_DESCRIPTION: Final = (
    "Runs a command in a PTY, returning output or a session ID for ongoing interaction."
)
WRITE_STDIN_DESCRIPTION: Final = (
    "Writes characters to an existing unified exec session and returns recent output."
)
_WORKDIR: Final = "Working directory for the command. Defaults to the turn cwd."
_OUTPUT_TOKENS: Final = (
    "Output token budget. Defaults to 10000 tokens; larger requests may be capped by policy."
)


@dataclass(frozen=True)
class SchemaSwitches:
    """The configuration that changes the advertised properties."""

    allow_login_shell: bool = True
    exec_permission_approvals: bool = False
    include_shell_parameter: bool = True
    include_environment_id: bool = False
    unified_exec_tty: bool = True
    advertise_command_batches: bool = False
    windows: bool = False


def _prop(kind: str, description: str, **rest: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **rest}


def _string_array(description: str) -> dict[str, Any]:
    return _prop("array", description, items={"type": "string"})


def approval_properties(exec_permission_approvals: bool) -> dict[str, dict[str, Any]]:
    """`sandbox_permissions`, `justification`, `prefix_rule`, `additional_permissions` (§4.4)."""
    if exec_permission_approvals:
        enum = ["use_default", "with_additional_permissions", "require_escalated"]
        sandbox = (
            "Per-command sandbox override. Defaults to `use_default`; use "
            "`with_additional_permissions` with `additional_permissions`, or "
            "`require_escalated` for unsandboxed execution."
        )
    else:
        enum = ["use_default", "require_escalated"]
        sandbox = (
            "Per-command sandbox override. Defaults to `use_default`; use `require_escalated` "
            "for unsandboxed execution."
        )
    props: dict[str, dict[str, Any]] = {
        "sandbox_permissions": _prop("string", sandbox, enum=enum),
        "justification": _prop(
            "string", "User-facing approval question for `require_escalated`; omit otherwise."
        ),
        "prefix_rule": _string_array(
            "Reusable approval prefix for `cmd`, only with `sandbox_permissions: "
            '"require_escalated"`; for example ["git", "pull"].'
        ),
    }
    if exec_permission_approvals:
        file_system = _prop(
            "object",
            "Filesystem access request.",
            properties={
                "read": _string_array(
                    "Absolute paths to grant read access; omit when none are needed."
                ),
                "write": _string_array(
                    "Absolute paths to grant write access; omit when none are needed."
                ),
            },
            additionalProperties=False,
        )
        network = _prop(
            "object",
            "Network access request.",
            properties={
                "enabled": _prop(
                    "boolean", "True requests network access; false or omitted requests none."
                )
            },
            additionalProperties=False,
        )
        props["additional_permissions"] = _prop(
            "object",
            "Sandboxed filesystem or network access for this command; only with "
            '`sandbox_permissions: "with_additional_permissions"`.',
            properties={"file_system": file_system, "network": network},
            additionalProperties=False,
        )
    return props


def _function_tool(
    name: str, description: str, props: dict[str, dict[str, Any]], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {key: props[key] for key in sorted(props)},
            "required": required,
            "additionalProperties": False,
        },
    }


def shell_command_tool(sw: SchemaSwitches) -> dict[str, Any]:
    """The `shell_command` tool entry (§4.1)."""
    command_description = "Shell script to run in the user's default shell."
    command: dict[str, Any] = _prop("string", command_description)
    if sw.advertise_command_batches:
        command = {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ],
            "description": command_description + " An array runs each element as a separate "
            "command, in order, stopping at the first failure.",
        }
    props: dict[str, dict[str, Any]] = {
        "command": command,
        "workdir": _prop("string", _WORKDIR),
        "timeout_ms": _prop("number", "Maximum command runtime. Defaults to 10000 ms."),
    }
    if sw.allow_login_shell:
        props["login"] = _prop(
            "boolean",
            "True runs with login shell semantics; false disables them. Defaults to true.",
        )
    props.update(approval_properties(sw.exec_permission_approvals))
    description = SHELL_COMMAND_DESCRIPTION_WINDOWS if sw.windows else SHELL_COMMAND_DESCRIPTION
    return _function_tool("shell_command", description, props, ["command"])


def exec_command_tool(sw: SchemaSwitches) -> dict[str, Any]:
    """The `exec_command` tool entry (§4.2)."""
    props: dict[str, dict[str, Any]] = {
        "cmd": _prop("string", "Shell command to execute."),
        "workdir": _prop("string", _WORKDIR),
        "yield_time_ms": _prop(
            "number",
            "Wait before yielding output. Defaults to 10000 ms; effective range is 250-30000 ms.",
        ),
        "max_output_tokens": _prop("number", _OUTPUT_TOKENS),
        # Observed in Codex 0.169.0: advertised even when login shells are disallowed.
        "login": _prop(
            "boolean",
            "True runs the shell with -l/-i semantics; false disables them. Defaults to true.",
        ),
    }
    if sw.unified_exec_tty:
        props["tty"] = _prop(
            "boolean", "True allocates a PTY for the command; false or omitted uses plain pipes."
        )
    if sw.include_shell_parameter:
        props["shell"] = _prop(
            "string", "Shell binary to launch. Defaults to the user's default shell."
        )
    if sw.include_environment_id:
        props["environment_id"] = _prop(
            "string",
            "Environment id from <environment_context>. Omit to use the primary environment.",
        )
    props.update(approval_properties(sw.exec_permission_approvals))
    description = EXEC_COMMAND_DESCRIPTION
    if sw.windows:
        description = f"{EXEC_COMMAND_DESCRIPTION}\n\n{WINDOWS_SAFETY_RULES}"
    return _function_tool("exec_command", description, props, ["cmd"])


def write_stdin_tool(sw: SchemaSwitches | None = None) -> dict[str, Any]:
    """The `write_stdin` tool entry (§4.3); no switch changes it."""
    props: dict[str, dict[str, Any]] = {
        "session_id": _prop("number", "Identifier of the running unified exec session."),
        "chars": _prop(
            "string", "Bytes to write to stdin. Defaults to empty, which polls without writing."
        ),
        "yield_time_ms": _prop(
            "number",
            "Wait before yielding output. Non-empty writes default to 250 ms and cap at 30000 ms; "
            "empty polls wait 5000-300000 ms by default.",
        ),
        "max_output_tokens": _prop("number", _OUTPUT_TOKENS),
    }
    return _function_tool("write_stdin", WRITE_STDIN_DESCRIPTION, props, ["session_id"])


_APPLY_PATCH_GRAMMAR: Final = (
    "start: begin_patch hunk+ end_patch\n"
    'begin_patch: "*** Begin Patch" LF\n'
    'end_patch: "*** End Patch" LF?\n'
    "\n"
    "hunk: add_hunk | delete_hunk | update_hunk\n"
    'add_hunk: "*** Add File: " filename LF add_line+\n'
    'delete_hunk: "*** Delete File: " filename LF\n'
    'update_hunk: "*** Update File: " filename LF change_move? change?\n'
    "\n"
    "filename: /(.+)/\n"
    'add_line: "+" /(.*)/ LF -> line\n'
    "\n"
    'change_move: "*** Move to: " filename LF\n'
    "change: (change_context | change_line)+ eof_line?\n"
    'change_context: ("@@" | "@@ " /(.+)/) LF\n'
    'change_line: ("+" | "-" | " ") /(.*)/ LF\n'
    'eof_line: "*** End of File" LF\n'
    "\n"
    "%import common.LF\n"
)

APPLY_PATCH_TOOL: Final[dict[str, Any]] = {
    "type": "custom",
    "name": "apply_patch",
    "description": "The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, "
    "so do not wrap the patch in JSON.",
    "format": {"type": "grammar", "syntax": "lark", "definition": _APPLY_PATCH_GRAMMAR},
}
