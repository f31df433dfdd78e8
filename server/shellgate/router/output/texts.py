"""Model-facing texts: classic blocks, batches, unified-exec responses, aborts, errors."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from decimal import Decimal

from shellgate.router.output.decoding import decode_utf8_lossy
from shellgate.router.output.head_tail import HeadTailSnapshot
from shellgate.router.output.truncation import (
    TruncationPolicy,
    approx_tokens_from_byte_count,
    count_lines,
    formatted_truncate_text,
    truncate_text,
    truncation_warning,
    utf8_len,
)

__all__ = [
    "UnifiedExecErrorText",
    "abort_message",
    "classic_duration_seconds",
    "exec_command_failed",
    "format_batch_output",
    "format_exec_output_freeform",
    "io_error_text",
    "render_unified_response",
    "unified_body_from_snapshot",
    "unified_output_body",
    "unified_overflow_body",
    "unified_response_text",
    "write_stdin_failed",
]

_NANOS_PER_MS = 1_000_000
_NANOS_PER_SEC = 1_000_000_000


# --- f32 arithmetic as Rust does it --------------------------------------------------------


def _f32(value: float) -> float:
    # Round a double to the nearest f32; +,-,*,/ of two f32 done in f64 and rounded
    # once give the same result as native f32 arithmetic.
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def _rust_round(value: float) -> float:
    # Rust `f32::round`: half away from zero.
    return math.copysign(math.floor(abs(value) + 0.5), value)


def _rust_f32_display(value: float) -> str:
    """Rust `Display` for an f32: shortest round-trip digits, no exponent, no `.0`."""
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits = repr(value)
    for precision in range(1, 10):
        candidate = f"{value:.{precision}g}"
        if _f32(float(candidate)) == value:
            digits = candidate
            break
    text = format(Decimal(digits), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _ms_to_secs_nanos(duration_ms: float) -> tuple[int, int]:
    total_nanos = round(duration_ms * _NANOS_PER_MS)
    secs, nanos = divmod(max(total_nanos, 0), _NANOS_PER_SEC)
    return secs, nanos


def _as_secs_f32(duration_ms: float) -> float:
    # Rust `Duration::as_secs_f32`: secs as f32 + (nanos as f32) / 1e9, all in f32.
    secs, nanos = _ms_to_secs_nanos(duration_ms)
    return _f32(_f32(float(secs)) + _f32(_f32(float(nanos)) / _f32(1e9)))


def _as_secs_f64(duration_ms: float) -> float:
    secs, nanos = _ms_to_secs_nanos(duration_ms)
    return float(secs) + nanos / 1e9


def classic_duration_seconds(duration_ms: float) -> str:
    """The `Wall time` number of a classic block (spec 05 §1.4)."""
    secs = _as_secs_f32(duration_ms)
    rounded = _f32(_f32(_rust_round(_f32(secs * _f32(10.0)))) / _f32(10.0))
    return _rust_f32_display(rounded)


# --- classic (shell_command) ---------------------------------------------------------------


def format_exec_output_freeform(
    exit_code: int,
    duration_ms: float,
    aggregated_output: str,
    timed_out: bool,
    policy: TruncationPolicy,
) -> str:
    """The freeform classic block: exit code, wall time, optional line total, output."""
    content = aggregated_output
    if timed_out:
        content = f"command timed out after {round(duration_ms)} milliseconds\n" + content
    body = truncate_text(content, policy)
    lines = [
        f"Exit code: {exit_code}",
        f"Wall time: {classic_duration_seconds(duration_ms)} seconds",
    ]
    total = count_lines(content)
    # Shown only when truncation changed the line count (a cut inside one line does not).
    if total != count_lines(body):
        lines.append(f"Total output lines: {total}")
    lines += ["Output:", body]
    return "\n".join(lines)


def format_batch_output(blocks: Sequence[str], not_run: Sequence[str]) -> str:
    """Batch text (decision 3a): blocks one blank line apart, then the not-run line."""
    parts = list(blocks)
    if not_run:
        # JSON array with `, ` separators, non-ASCII kept as is.
        parts.append(f"Commands not run: {json.dumps(list(not_run), ensure_ascii=False)}")
    if not parts:
        return ""
    text = parts[0]
    for part in parts[1:]:
        text += ("\n" if text.endswith("\n") else "\n\n") + part
    return text


_ERRNO_KIND = {
    1: "PermissionDenied",
    2: "NotFound",
    7: "ArgumentListTooLong",
    12: "OutOfMemory",
    13: "PermissionDenied",
    20: "NotADirectory",
    21: "IsADirectory",
    26: "ExecutableFileBusy",
    36: "InvalidFilename",
    40: "FilesystemLoop",
}


def io_error_text(errno: int, strerror: str) -> str:
    """`execution error: Io(Os { … })` for a spawn or io failure (spec 05 §1.5)."""
    kind = _ERRNO_KIND.get(errno, "Uncategorized")
    message = json.dumps(strerror, ensure_ascii=False)
    return f"execution error: Io(Os {{ code: {errno}, kind: {kind}, message: {message} }})"


# --- unified exec (exec_command / write_stdin) ---------------------------------------------


def unified_output_body(text: str, policy: TruncationPolicy) -> str:
    """Body of a response whose retention dropped nothing (current truncation form)."""
    return formatted_truncate_text(text, policy)


def unified_overflow_body(
    head: str, tail: str, omitted_bytes: int, policy: TruncationPolicy
) -> str:
    """Body when the 1 MiB retention omitted `omitted_bytes` between head and tail."""
    note = f"... {omitted_bytes} bytes omitted ...\n"
    combined = head + "\n" + note + tail
    if utf8_len(combined) <= policy.byte_budget:
        return combined
    # The omission line takes the place of `Total output lines`.
    original = approx_tokens_from_byte_count(utf8_len(head) + utf8_len(tail) + omitted_bytes)
    return truncation_warning(original) + note + "\n" + truncate_text(combined, policy)


def unified_body_from_snapshot(
    snapshot: HeadTailSnapshot, policy: TruncationPolicy
) -> tuple[str, int]:
    """The body of one response and its `Original token count` (from the raw bytes)."""
    original = approx_tokens_from_byte_count(snapshot.raw_byte_count)
    if snapshot.omitted_bytes == 0:
        # Head and tail are contiguous: decode them together so no character is split.
        return unified_output_body(decode_utf8_lossy(snapshot.to_bytes()), policy), original
    body = unified_overflow_body(
        decode_utf8_lossy(snapshot.head),
        decode_utf8_lossy(snapshot.tail),
        snapshot.omitted_bytes,
        policy,
    )
    return body, original


def render_unified_response(
    *,
    chunk_id: str,
    wall_time_ms: float,
    exit_code: int | None,
    session_id: int | None,
    original_token_count: int | None,
    body: str,
) -> str:
    """Assemble an exec_command / write_stdin response around a finished body."""
    lines: list[str] = []
    if chunk_id:
        lines.append(f"Chunk ID: {chunk_id}")
    lines.append(f"Wall time: {_as_secs_f64(wall_time_ms):.4f} seconds")
    # "exited" and "running" never both appear: an exit wins.
    if exit_code is not None:
        lines.append(f"Process exited with code {exit_code}")
    elif session_id is not None:
        lines.append(f"Process running with session ID {session_id}")
    if original_token_count is not None:
        lines.append(f"Original token count: {original_token_count}")
    lines += ["Output:", body]
    return "\n".join(lines)


def unified_response_text(
    *,
    chunk_id: str,
    wall_time_ms: float,
    exit_code: int | None,
    session_id: int | None,
    original_token_count: int | None,
    output: str,
    policy: TruncationPolicy,
) -> str:
    """A unified-exec response whose decoded output fit the retention buffer."""
    return render_unified_response(
        chunk_id=chunk_id,
        wall_time_ms=wall_time_ms,
        exit_code=exit_code,
        session_id=session_id,
        original_token_count=original_token_count,
        body=unified_output_body(output, policy),
    )


# --- aborts and errors ---------------------------------------------------------------------

# Codex's shell-family names (core/src/tools/parallel.rs); of shellgate's tools only
# `shell_command` is one. `exec_command`/`write_stdin` get the short form.
_SHELL_FAMILY = frozenset(
    {"shell", "container.exec", "local_shell", "shell_command", "unified_exec"}
)


def abort_message(tool_name: str, elapsed_ms: float) -> str:
    """The output of a call interrupted while running (spec 05 §4)."""
    # `{secs:.1}` of an f32: exact decimal value, ties to even, as Python formats it.
    secs = f"{_as_secs_f32(elapsed_ms):.1f}"
    if tool_name in _SHELL_FAMILY:
        return f"Wall time: {secs} seconds\naborted by user"
    return f"aborted by user after {secs}s"


class UnifiedExecErrorText:
    """Display texts of `UnifiedExecError` (spec 05 §3.7)."""

    WRITE_TO_STDIN = "failed to write to stdin"
    STDIN_CLOSED = (
        "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"
    )
    MISSING_COMMAND_LINE = "missing command line for unified exec request"

    @staticmethod
    def create_process(message: str) -> str:
        """The process could not be created."""
        return f"Failed to create unified exec process: {message}"

    @staticmethod
    def process_failed(message: str) -> str:
        """The process failed after it was created."""
        return f"Unified exec process failed: {message}"

    @staticmethod
    def unknown_process_id(process_id: int | str) -> str:
        """No such unified-exec process."""
        return f"Unknown process id {process_id}"

    @staticmethod
    def sandbox_denied(message: str) -> str:
        """The sandbox denied the command."""
        return f"Command denied by sandbox: {message}"


def exec_command_failed(debug: str) -> str:
    """How exec_command wraps a start error (its Rust debug form)."""
    return f"exec_command failed: {debug}"


def write_stdin_failed(display: str) -> str:
    """How write_stdin wraps every error (its Display form)."""
    return f"write_stdin failed: {display}"
