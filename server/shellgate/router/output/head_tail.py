"""Bounded output capture while streaming: classic caps; the unified head/tail capture is
`shellgate.common.head_tail` (re-exported here), shared with the exec-server."""

from __future__ import annotations

from shellgate.common.head_tail import (
    UNIFIED_EXEC_OUTPUT_MAX_BYTES,
    HeadTailBuffer,
    HeadTailSnapshot,
)

__all__ = [
    "CLASSIC_STREAM_MAX_BYTES",
    "UNIFIED_EXEC_OUTPUT_MAX_BYTES",
    "CappedStream",
    "HeadTailBuffer",
    "HeadTailSnapshot",
    "aggregate_output",
]

# Spec 05 §1.2: each classic stream keeps at most 1 MiB, and so does the aggregate.
CLASSIC_STREAM_MAX_BYTES = 1024 * 1024


class CappedStream:
    """One classic stream: keeps its leading `max_bytes`, reads and counts the rest."""

    __slots__ = ("_data", "_max_bytes", "_total")

    def __init__(self, max_bytes: int = CLASSIC_STREAM_MAX_BYTES) -> None:
        self._max_bytes = max_bytes
        self._data = bytearray()
        self._total = 0

    def push(self, chunk: bytes) -> None:
        """Append a chunk; bytes past the cap are discarded (spec 05 §1.2)."""
        self._total += len(chunk)
        room = self._max_bytes - len(self._data)
        if room > 0:
            self._data += chunk[:room]

    @property
    def data(self) -> bytes:
        """The retained leading bytes."""
        return bytes(self._data)

    @property
    def total_bytes(self) -> int:
        """Every byte pushed, kept or not."""
        return self._total


def aggregate_output(
    stdout: bytes, stderr: bytes, max_bytes: int = CLASSIC_STREAM_MAX_BYTES
) -> bytes:
    """stdout followed by stderr within `max_bytes` (spec 05 §1.2)."""
    if len(stdout) + len(stderr) <= max_bytes:
        return stdout + stderr
    # stdout gets up to a third, stderr what remains, and stdout takes back what stderr
    # leaves unused; each stream contributes its leading bytes.
    want_stdout = min(len(stdout), max_bytes // 3)
    stderr_take = min(len(stderr), max_bytes - want_stdout)
    remaining = max_bytes - want_stdout - stderr_take
    stdout_take = want_stdout + min(remaining, len(stdout) - want_stdout)
    return stdout[:stdout_take] + stderr[:stderr_take]
