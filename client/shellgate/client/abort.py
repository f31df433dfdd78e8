"""The abort output for a call the harness cancelled itself (spec 05 §4, spec 06 §4).

When the harness cancels an Execute RPC, the router kills the command but cannot deliver a
`completed` event; the conversation still needs exactly one output item for the call. This
builds the same item the router would have sent for an interrupt.
"""

from __future__ import annotations

import datetime
import json
import struct

from shellgate.client.events import Completed, Termination

__all__ = ["abort_message", "abort_output_item"]

_NANOS_PER_MS = 1_000_000
_NANOS_PER_SEC = 1_000_000_000
# Codex's shell-family tool names get the classic `Wall time` layout; every other tool
# (exec_command, write_stdin, apply_patch, …) the one-line form.
_SHELL_FAMILY = frozenset({"shell", "container.exec", "local_shell", "shell_command"})


def _f32(value: float) -> float:
    # Round to the nearest f32: Codex computes the elapsed seconds as an f32.
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def _secs_f32(elapsed_ms: float) -> float:
    # Rust `Duration::as_secs_f32`: (secs as f32) + (nanos as f32) / 1e9, in f32.
    total_nanos = max(round(elapsed_ms * _NANOS_PER_MS), 0)
    secs, nanos = divmod(total_nanos, _NANOS_PER_SEC)
    return _f32(_f32(float(secs)) + _f32(_f32(float(nanos)) / _f32(1e9)))


def abort_message(tool_name: str, elapsed_ms: float) -> str:
    """The model-facing text of a call aborted after `elapsed_ms` milliseconds."""
    # `{secs:.1}` formats the f32's exact decimal value with ties to even, which is what
    # Python's `.1f` does for the (exactly representable) f32 value.
    secs = f"{_secs_f32(elapsed_ms):.1f}"
    if tool_name in _SHELL_FAMILY:
        return f"Wall time: {secs} seconds\naborted by user"
    return f"aborted by user after {secs}s"


def _elapsed_ms(elapsed: datetime.timedelta | float) -> float:
    if isinstance(elapsed, datetime.timedelta):
        return elapsed / datetime.timedelta(milliseconds=1)
    return float(elapsed) * 1000.0


def abort_output_item(
    call_id: str,
    tool_name: str,
    elapsed: datetime.timedelta | float,
    *,
    custom: bool | None = None,
) -> Completed:
    """The `completed` event (output item + metadata) for a call the harness cancelled.

    `elapsed` is a timedelta or seconds. `custom` picks `custom_tool_call_output` (the item
    was a `custom_tool_call`); by default only `apply_patch` is a custom tool.
    """
    elapsed_ms = _elapsed_ms(elapsed)
    text = abort_message(tool_name, elapsed_ms)
    is_custom = tool_name == "apply_patch" if custom is None else custom
    item = {
        "type": "custom_tool_call_output" if is_custom else "function_call_output",
        "call_id": call_id,
        "output": text,
    }
    return Completed(
        output_item_json=json.dumps(item, ensure_ascii=False, separators=(",", ":")),
        output_text=text,
        success=False,
        exit_code=None,
        session_id=None,
        wall_time_ms=max(round(elapsed_ms), 0),
        original_token_count=None,
        truncated=False,
        termination=Termination.CANCELLED,
        model_warnings=(),
    )
