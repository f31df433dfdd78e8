"""Build model output items (ToolCallItem) from plain Python values."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shellgate.v1 import common_pb2

__all__ = [
    "CallIdentity",
    "ItemLike",
    "apply_patch_item",
    "call_identity",
    "custom_tool_call_item",
    "exec_command_item",
    "function_call_item",
    "new_call_id",
    "shell_command_item",
    "to_tool_call_item",
    "write_stdin_item",
]

# A ToolCallItem, its split form, the raw output item as JSON text, or that item as a dict.
ItemLike = common_pb2.ToolCallItem | common_pb2.SplitToolCall | str | Mapping[str, Any]


def new_call_id() -> str:
    """A fresh call id in the Responses API style (`call_…`)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _dumps(value: Any) -> str:
    # Compact and UTF-8 as the Responses API sends items; the router reads it byte-exact.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def function_call_item(
    name: str, arguments: Mapping[str, Any] | str, call_id: str | None = None
) -> common_pb2.ToolCallItem:
    """A raw `function_call` item; a Mapping of arguments is encoded as the JSON string."""
    args_text = arguments if isinstance(arguments, str) else _dumps(dict(arguments))
    item = {
        "type": "function_call",
        "name": name,
        "arguments": args_text,
        "call_id": call_id or new_call_id(),
    }
    return common_pb2.ToolCallItem(raw_json=_dumps(item))


def custom_tool_call_item(
    name: str, input_text: str, call_id: str | None = None
) -> common_pb2.ToolCallItem:
    """A raw `custom_tool_call` item (e.g. `apply_patch` with a patch body)."""
    item = {
        "type": "custom_tool_call",
        "name": name,
        "input": input_text,
        "call_id": call_id or new_call_id(),
    }
    return common_pb2.ToolCallItem(raw_json=_dumps(item))


def _present(**values: Any) -> dict[str, Any]:
    # Only the arguments the caller gave: absent and default differ for the decoder.
    return {key: value for key, value in values.items() if value is not None}


def exec_command_item(
    cmd: str,
    *,
    call_id: str | None = None,
    workdir: str | None = None,
    shell: str | None = None,
    tty: bool | None = None,
    yield_time_ms: int | None = None,
    max_output_tokens: int | None = None,
    login: bool | None = None,
    sandbox_permissions: str | None = None,
    justification: str | None = None,
    prefix_rule: Sequence[str] | None = None,
    environment_id: str | None = None,
) -> common_pb2.ToolCallItem:
    """An `exec_command` function call for a command string."""
    args = {"cmd": cmd} | _present(
        workdir=workdir,
        shell=shell,
        tty=tty,
        yield_time_ms=yield_time_ms,
        max_output_tokens=max_output_tokens,
        login=login,
        sandbox_permissions=sandbox_permissions,
        justification=justification,
        prefix_rule=list(prefix_rule) if prefix_rule is not None else None,
        environment_id=environment_id,
    )
    return function_call_item("exec_command", args, call_id)


def shell_command_item(
    command: str,
    *,
    call_id: str | None = None,
    workdir: str | None = None,
    timeout_ms: int | None = None,
    login: bool | None = None,
    sandbox_permissions: str | None = None,
    justification: str | None = None,
    prefix_rule: Sequence[str] | None = None,
    environment_id: str | None = None,
) -> common_pb2.ToolCallItem:
    """A `shell_command` function call for a command string."""
    args = {"command": command} | _present(
        workdir=workdir,
        timeout_ms=timeout_ms,
        login=login,
        sandbox_permissions=sandbox_permissions,
        justification=justification,
        prefix_rule=list(prefix_rule) if prefix_rule is not None else None,
        environment_id=environment_id,
    )
    return function_call_item("shell_command", args, call_id)


def write_stdin_item(
    session_id: int,
    chars: str = "",
    *,
    call_id: str | None = None,
    yield_time_ms: int | None = None,
    max_output_tokens: int | None = None,
) -> common_pb2.ToolCallItem:
    """A `write_stdin` function call: send `chars` to a running exec_command session.

    Empty `chars` polls: the call waits up to `yield_time_ms` and returns what the process
    printed meanwhile (the session id comes from `Completed.session_id`).
    """
    args = {"session_id": session_id, "chars": chars} | _present(
        yield_time_ms=yield_time_ms, max_output_tokens=max_output_tokens
    )
    return function_call_item("write_stdin", args, call_id)


def apply_patch_item(
    patch: str, *, call_id: str | None = None, freeform: bool = True
) -> common_pb2.ToolCallItem:
    """An `apply_patch` call with a `*** Begin Patch` … `*** End Patch` body.

    Freeform (a `custom_tool_call`, what ListTools offers by default) or, with
    `freeform=False`, the JSON function form `{"input": patch}`.
    """
    if freeform:
        return custom_tool_call_item("apply_patch", patch, call_id)
    return function_call_item("apply_patch", {"input": patch}, call_id)


def to_tool_call_item(item: ItemLike) -> common_pb2.ToolCallItem:
    """Coerce any ItemLike into a ToolCallItem (strings are sent verbatim as raw_json)."""
    if isinstance(item, common_pb2.ToolCallItem):
        return item
    if isinstance(item, common_pb2.SplitToolCall):
        return common_pb2.ToolCallItem(split=item)
    if isinstance(item, str):
        return common_pb2.ToolCallItem(raw_json=item)
    if isinstance(item, Mapping):
        return common_pb2.ToolCallItem(raw_json=_dumps(dict(item)))
    raise TypeError(f"cannot use {type(item).__name__} as a tool call item")


@dataclass(frozen=True)
class CallIdentity:
    """What pairing an output with its call needs: call id, tool name, custom or function."""

    call_id: str
    tool_name: str
    custom: bool


def call_identity(item: ItemLike) -> CallIdentity | None:
    """The call id, name and kind of an item; None when it is not a function/custom call."""
    message = to_tool_call_item(item)
    if message.WhichOneof("item") == "split":
        split = message.split
        custom = split.kind == common_pb2.TOOL_CALL_KIND_CUSTOM_TOOL_CALL
        return CallIdentity(split.call_id, split.name, custom)
    try:
        value = json.loads(message.raw_json)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    call_id, name = value.get("call_id"), value.get("name")
    if kind not in ("function_call", "custom_tool_call"):
        return None
    if not isinstance(call_id, str) or not isinstance(name, str):
        return None
    return CallIdentity(call_id, name, kind == "custom_tool_call")
