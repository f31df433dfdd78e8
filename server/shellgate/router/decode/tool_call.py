"""Decode stage: Responses API item → `ToolCall` → typed tool arguments (spec 01).

Domain API (pure, no I/O):

* `build_tool_call(item)` — router rules of spec 01 §2 over one decoded `ResponseItem`
  mapping (`parse_response_item(text)` turns the raw item JSON text into that mapping).
  Returns a `ToolCall`, `NoToolCall` (with why) or a `ToolError` (model-facing text).
* `dispatch_error(tool_name, payload_kind, registered)` — the text the model gets when the
  registry cannot run the call (`unsupported call: …`, `aborted`), or None.
* Argument decoders over a call's one `Arguments`, each returning `Decoded[Params]` or a
  `ToolError` with the model-facing text (`failed to parse function arguments: … at line L …`):
  - `shell_command`: `shell_command_workdir` (generic first pass) then `decode_shell_command`;
  - `exec_command`: `decode_exec_environment_id` (pass 1), `decode_exec_workdir` (pass 2),
    `decode_exec_command` (pass 3); `decode_exec_command_args` runs all three;
  - `write_stdin`: `decode_session_id` (pass 1), `decode_write_stdin` (pass 2, live session).
* `exec_post_decode_check(params, unified_exec_tty)` and `resolve_sandbox_permissions` — the
  exec_command rules of spec 01 §5.3 (TTY disabled, `justification` without override).
The handler stage (`handler.py`) composes these with environments and shells.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from shellgate.router.decode.item_shape import NoToolCall, not_strings, parse_response_item
from shellgate.router.decode.params import (
    EXEC_KNOWN_KEYS,
    TERMINAL_SESSION_SPEC,
    TOOL_ENVIRONMENT_SPEC,
    WORKDIR_SPEC,
    WRITE_STDIN_SPEC,
    AdditionalPermissions,
    ExecCommandParams,
    ShellCommandParams,
    WriteStdinParams,
    exec_command_spec,
    shell_command_spec,
)
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.serde_json.typed import (
    Arguments,
    JsonError,
    ProductError,
    StructResult,
    StructSpec,
    debug_str,
    decode_struct,
    format_float,
    parse_value,
)

P = TypeVar("P")

PARSE_PREFIX: Final = "failed to parse function arguments: "
# shellgate's own bound: the parser is linear, but a caller must not make it read gigabytes.
MAX_ARGUMENTS_BYTES: Final = 8 * 1024 * 1024
TTY_DISABLED: Final = "TTY execution is disabled by config; omit `tty` or set it to false."
JUSTIFICATION_WITHOUT_OVERRIDE: Final = (
    "`justification` requires an explicit `sandbox_permissions`; use "
    '`sandbox_permissions: "require_escalated"` for unsandboxed execution, or omit '
    "`justification`."
)


class PayloadKind(enum.StrEnum):
    """The payload kinds of a `ToolCall`."""

    FUNCTION = "function"
    CUSTOM = "custom"
    TOOL_SEARCH = "tool_search"


@dataclass(frozen=True)
class ToolName:
    """A tool name with its optional namespace."""

    namespace: str | None
    name: str

    @property
    def registry_name(self) -> str:
        """`{namespace}{name}`, plain concatenation (spec 01 §2.1)."""
        return f"{self.namespace or ''}{self.name}"


@dataclass(frozen=True)
class ToolCall:
    """A routed tool call: Function{arguments} / Custom{input} / ToolSearch{query, limit}."""

    tool_name: ToolName
    call_id: str
    kind: PayloadKind
    arguments: str = ""
    input: str = ""
    query: str = ""
    limit: int | None = None


@dataclass(frozen=True)
class ToolError:
    """A respond-to-model error: `text` is exactly what the model receives."""

    text: str


@dataclass(frozen=True)
class Decoded(Generic[P]):
    """Typed parameters plus decode warnings (decision 3c)."""

    params: P
    warnings: tuple[str, ...] = ()


# --- router ------------------------------------------------------------------------------
def _as_json_number(value: Any) -> Any:
    """A Python int as serde_json's `Value` holds it: outside u64/i64 it is a float."""
    in_range = (
        isinstance(value, bool) or not isinstance(value, int) or -(1 << 63) <= value < 1 << 64
    )
    return value if in_range else float(value)


def _value_type(value: Any) -> str:
    value = _as_json_number(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{format_float(value)}`"
    if isinstance(value, str):
        return f"string {debug_str(value)}"
    return "sequence" if isinstance(value, list) else "map"


_SEARCH_PARAMS: Final = "struct SearchToolCallParams"


def _search_query(query: Any) -> str | None:
    return (
        None if isinstance(query, str) else f"invalid type: {_value_type(query)}, expected a string"
    )


def _search_limit(limit: Any) -> str | None:
    limit = _as_json_number(limit)
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        return f"invalid type: {_value_type(limit)}, expected usize"
    if limit < 0:
        return f"invalid value: integer `{limit}`, expected usize"
    return None


def _tool_search_params(arguments: Any) -> tuple[str, int | None] | str:
    """`serde_json::from_value::<SearchToolCallParams>`; an error message on failure.

    `SearchToolCallParams { query: String, #[serde(default)] limit: Option<usize> }`: an
    object by field name, or (serde's sequence form) an array by position.
    """
    if isinstance(arguments, list):
        if not arguments:
            return f"invalid length 0, expected {_SEARCH_PARAMS} with 2 elements"
        values = {"query": arguments[0], "limit": arguments[1] if len(arguments) > 1 else None}
        failed = _search_query(values["query"]) or _search_limit(values["limit"])
        if failed is None and len(arguments) > 2:
            failed = f"invalid length {len(arguments)}, expected fewer elements in array"
    elif isinstance(arguments, dict):
        if "query" not in arguments:
            # Field errors come first: the map is visited before missing fields are checked.
            return _search_limit(arguments.get("limit")) or "missing field `query`"
        values = arguments
        failed = _search_query(values["query"]) or _search_limit(values.get("limit"))
    else:
        return f"invalid type: {_value_type(arguments)}, expected {_SEARCH_PARAMS}"
    if failed is not None:
        return failed
    limit = values.get("limit")
    return str(values["query"]), None if limit is None else int(limit)


def build_tool_call(item: Mapping[str, Any]) -> ToolCall | NoToolCall | ToolError:
    """`ToolRouter::build_tool_call` (spec 01 §2)."""
    kind = item.get("type")
    if kind == "function_call":
        name, call_id, arguments = item.get("name"), item.get("call_id"), item.get("arguments")
        if not (isinstance(name, str) and isinstance(call_id, str) and isinstance(arguments, str)):
            return NoToolCall(not_strings("function_call", item, ("name", "call_id", "arguments")))
        namespace = item.get("namespace")
        if not isinstance(namespace, str) or namespace == "functions":
            namespace = None
        return ToolCall(
            ToolName(namespace, name), call_id, PayloadKind.FUNCTION, arguments=arguments
        )
    if kind == "tool_search_call":
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or item.get("execution") != "client":
            return NoToolCall("tool_search_call not executed by the client")
        parsed = _tool_search_params(item.get("arguments"))
        if isinstance(parsed, str):
            return ToolError(f"failed to parse tool_search arguments: {parsed}")
        return ToolCall(
            ToolName(None, "tool_search"), call_id, PayloadKind.TOOL_SEARCH,
            query=parsed[0], limit=parsed[1],
        )  # fmt: skip
    if kind == "custom_tool_call":
        name, call_id, text = item.get("name"), item.get("call_id"), item.get("input")
        if not (isinstance(name, str) and isinstance(call_id, str) and isinstance(text, str)):
            return NoToolCall(not_strings("custom_tool_call", item, ("name", "call_id", "input")))
        namespace = item.get("namespace")
        return ToolCall(
            ToolName(namespace if isinstance(namespace, str) else None, name),
            call_id, PayloadKind.CUSTOM, input=text,
        )  # fmt: skip
    if kind == "local_shell_call":
        return NoToolCall("local_shell_call is never executed")
    return NoToolCall(f"item type {kind!r} is not a tool call")


# Payload kind each shellgate handler accepts (spec 01 §2.1).
HANDLER_PAYLOADS: Final[Mapping[str, PayloadKind]] = {
    "shell_command": PayloadKind.FUNCTION,
    "exec_command": PayloadKind.FUNCTION,
    "write_stdin": PayloadKind.FUNCTION,
    "apply_patch": PayloadKind.CUSTOM,
    "tool_search": PayloadKind.TOOL_SEARCH,
}


def dispatch_error(
    registry_name: str, kind: PayloadKind, registered: Collection[str]
) -> str | None:
    """The dispatch text for a call the registry cannot run, or None when it can."""
    if registry_name not in registered:
        if kind is PayloadKind.CUSTOM:
            return f"unsupported custom tool call: {registry_name}"
        return f"unsupported call: {registry_name}"
    accepted = HANDLER_PAYLOADS.get(registry_name)
    if accepted is not None and accepted is not kind:
        return "aborted"
    return None


# --- argument decode ---------------------------------------------------------------------
def _run(arguments: Arguments, spec: StructSpec) -> StructResult | ToolError:
    """One serde pass; errors become the model-facing text."""
    if len(arguments.text) > MAX_ARGUMENTS_BYTES:
        return ToolError(f"{PARSE_PREFIX}arguments exceed {MAX_ARGUMENTS_BYTES} bytes")
    try:
        return decode_struct(arguments, spec)
    except JsonError as err:
        return ToolError(PARSE_PREFIX + err.render())
    except ProductError as err:
        return ToolError(PARSE_PREFIX + err.message)
    except RecursionError:  # defensive: typed nesting is bounded at 128 levels
        return ToolError(f"{PARSE_PREFIX}recursion limit exceeded")


def _warnings(unknown: list[str], known: Collection[str] = ()) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for key in unknown:
        if key not in known:
            seen.setdefault(key)
    return tuple(f"unknown argument `{key}` was ignored" for key in seen)


def shell_command_workdir(arguments: Arguments) -> str | ToolError | None:
    """shell_command's generic first pass: syntax errors, then a non-empty string `workdir`."""
    if len(arguments.text) > MAX_ARGUMENTS_BYTES:
        return ToolError(f"{PARSE_PREFIX}arguments exceed {MAX_ARGUMENTS_BYTES} bytes")
    try:
        value = parse_value(arguments)
    except JsonError as err:
        return ToolError(PARSE_PREFIX + err.render())
    except RecursionError:
        return ToolError(f"{PARSE_PREFIX}recursion limit exceeded")
    if isinstance(value, dict):
        workdir = value.get("workdir")
        if isinstance(workdir, str) and workdir:
            return workdir
    return None


def _build(values: Mapping[str, Any], factory: Callable[..., P], **extra: Any) -> P:
    fields = dict(values)
    if "prefix_rule" in fields and fields["prefix_rule"] is not None:
        fields["prefix_rule"] = tuple(fields["prefix_rule"])
    return factory(**fields, **extra)


def decode_shell_command(
    arguments: Arguments, base_cwd: str | None = None, *, first_pass_done: bool = False
) -> Decoded[ShellCommandParams] | ToolError:
    """Both shell_command passes (spec 01 §5.2); `base_cwd` anchors permission paths.

    `first_pass_done`: the caller already ran `shell_command_workdir` on these arguments
    and it succeeded (the pass is pure, so running it again would only repeat the parse).
    """
    if not first_pass_done:
        first = shell_command_workdir(arguments)
        if isinstance(first, ToolError):
            return first
    result = _run(arguments, shell_command_spec(base_cwd))
    if isinstance(result, ToolError):
        return result
    params = _build(result.values, ShellCommandParams)
    return Decoded(params, _warnings(result.unknown_keys, _SHELL_KNOWN_KEYS))


_SHELL_KNOWN_KEYS: Final = frozenset(
    {"timeout"} | {f.name for f in shell_command_spec(None).fields}
)


def decode_exec_environment_id(arguments: Arguments) -> str | ToolError | None:
    """exec_command pass 1 (`ToolEnvironmentArgs`)."""
    result = _run(arguments, TOOL_ENVIRONMENT_SPEC)
    if isinstance(result, ToolError):
        return result
    env_id: str | None = result.values["environment_id"]
    return env_id


def decode_exec_workdir(arguments: Arguments) -> str | ToolError | None:
    """exec_command pass 2 (`workdir` only)."""
    result = _run(arguments, WORKDIR_SPEC)
    if isinstance(result, ToolError):
        return result
    workdir: str | None = result.values["workdir"]
    return workdir


def decode_exec_command(
    arguments: Arguments, base_cwd: str | None = None, environment_id: str | None = None
) -> Decoded[ExecCommandParams] | ToolError:
    """exec_command pass 3 (`ExecCommandArgs`); passes 1–2 must have succeeded."""
    result = _run(arguments, exec_command_spec(base_cwd))
    if isinstance(result, ToolError):
        return result
    params = _build(result.values, ExecCommandParams, environment_id=environment_id)
    return Decoded(params, _warnings(result.unknown_keys, EXEC_KNOWN_KEYS))


def decode_exec_command_args(
    arguments: Arguments, base_cwd: str | None = None
) -> Decoded[ExecCommandParams] | ToolError:
    """All three exec_command passes without environment selection."""
    env_id = decode_exec_environment_id(arguments)
    if isinstance(env_id, ToolError):
        return env_id
    workdir = decode_exec_workdir(arguments)
    if isinstance(workdir, ToolError):
        return workdir
    return decode_exec_command(arguments, base_cwd, env_id)


def decode_session_id(arguments: Arguments) -> int | ToolError:
    """write_stdin pass 1 (`TerminalSessionArgs`)."""
    result = _run(arguments, TERMINAL_SESSION_SPEC)
    if isinstance(result, ToolError):
        return result
    session_id: int = result.values["session_id"]
    return session_id


def decode_write_stdin(arguments: Arguments) -> Decoded[WriteStdinParams] | ToolError:
    """Both write_stdin passes, for a call whose session exists."""
    first = decode_session_id(arguments)
    if isinstance(first, ToolError):
        return first
    result = _run(arguments, WRITE_STDIN_SPEC)
    if isinstance(result, ToolError):
        return result
    known = {f.name for f in WRITE_STDIN_SPEC.fields}
    return Decoded(_build(result.values, WriteStdinParams), _warnings(result.unknown_keys, known))


# --- post-decode rules -------------------------------------------------------------------
def resolve_sandbox_permissions(
    tool: str, sandbox_permissions: SandboxPermissions | None, justification: str | None
) -> SandboxPermissions | ToolError:
    """The effective requested value; exec_command rejects `justification` without one."""
    if tool == "exec_command" and justification is not None and sandbox_permissions is None:
        return ToolError(JUSTIFICATION_WITHOUT_OVERRIDE)
    return sandbox_permissions or SandboxPermissions.USE_DEFAULT


def exec_post_decode_check(params: ExecCommandParams, unified_exec_tty: bool) -> ToolError | None:
    """exec_command steps 6–7 (spec 02 §4.1): TTY disabled, then the justification rule."""
    if params.tty and not unified_exec_tty:
        return ToolError(TTY_DISABLED)
    outcome = resolve_sandbox_permissions(
        "exec_command", params.sandbox_permissions, params.justification
    )
    return outcome if isinstance(outcome, ToolError) else None


__all__ = [
    "AdditionalPermissions",
    "Arguments",
    "Decoded",
    "ExecCommandParams",
    "NoToolCall",
    "PayloadKind",
    "SandboxPermissions",
    "ShellCommandParams",
    "ToolCall",
    "ToolError",
    "ToolName",
    "WriteStdinParams",
    "build_tool_call",
    "decode_exec_command",
    "decode_exec_command_args",
    "decode_exec_environment_id",
    "decode_exec_workdir",
    "decode_session_id",
    "decode_shell_command",
    "decode_write_stdin",
    "dispatch_error",
    "exec_post_decode_check",
    "parse_response_item",
    "resolve_sandbox_permissions",
    "shell_command_workdir",
]
