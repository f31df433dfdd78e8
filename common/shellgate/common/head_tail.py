"""Codex's per-process head/tail capture of a unified-exec session's output (spec 05 §3.1).

Pure and shared: the router keeps one per session of its embedded environment, and the
exec-server keeps one per detached process (its SessionOutputService.Drain), so a session's
model-visible output is built by the same code wherever its capture lives.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = [
    "UNIFIED_EXEC_OUTPUT_MAX_BYTES",
    "DrainedCapture",
    "HeadTailBuffer",
    "HeadTailSnapshot",
    "joined",
]

# Spec 05 §3.1: a unified-exec process retains 1 MiB between drains (512 KiB head + tail).
UNIFIED_EXEC_OUTPUT_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HeadTailSnapshot:
    """What a head/tail buffer held: the head, the tail, and the bytes dropped between."""

    head: bytes
    tail: bytes
    omitted_bytes: int

    @property
    def raw_byte_count(self) -> int:
        """Every byte pushed since the last drain, including the omitted ones."""
        return len(self.head) + len(self.tail) + self.omitted_bytes

    def to_bytes(self) -> bytes:
        """Head then tail, without any marker."""
        return self.head + self.tail


class HeadTailBuffer:
    """Keeps the first `max_bytes // 2` and the last remaining bytes of a byte stream.

    Memory stays bounded by `max_bytes` however much is pushed; the middle is counted in
    `omitted_bytes`. Draining resets the buffer, so each response sees only new output.
    """

    __slots__ = (
        "_head",
        "_head_budget",
        "_head_closed",
        "_max_bytes",
        "_omitted",
        "_tail",
        "_tail_budget",
        "_tail_len",
    )

    def __init__(self, max_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        self._max_bytes = max_bytes
        self._head_budget = max_bytes // 2
        self._tail_budget = max_bytes - self._head_budget
        self._head = bytearray()
        # Set once bytes were lost after the head: the head must stay a prefix of the output.
        self._head_closed = False
        # Tail chunks are kept whole except the oldest, which may be trimmed at its front.
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self._omitted = 0

    @property
    def max_bytes(self) -> int:
        """The retention cap."""
        return self._max_bytes

    @property
    def omitted_bytes(self) -> int:
        """Bytes dropped from the middle since the last drain."""
        return self._omitted

    @property
    def retained_bytes(self) -> int:
        """Bytes currently held (head + tail)."""
        return len(self._head) + self._tail_len

    @property
    def total_bytes(self) -> int:
        """Bytes pushed since the last drain (retained + omitted)."""
        return self.retained_bytes + self._omitted

    def push(self, chunk: bytes) -> None:
        """Append a chunk: fill the head first, then keep a capped tail."""
        if not chunk:
            return
        if self._max_bytes == 0:
            self._omitted += len(chunk)
            return
        room = 0 if self._head_closed else self._head_budget - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._push_tail(bytes(chunk))

    def skip(self, byte_count: int) -> None:
        """Count `byte_count` bytes that were lost upstream (e.g. evicted by a remote daemon
        before they were read) as omitted at this point of the stream.

        They would have been head or middle bytes: the head (a prefix of the output) takes
        nothing more, so the shown text is exactly what survived and `omitted_bytes` the rest.
        """
        if byte_count <= 0:
            return
        self._omitted += byte_count
        self._head_closed = True
        # Whatever the tail held precedes the lost bytes: it is middle now.
        self._omitted += self._tail_len
        self._tail.clear()
        self._tail_len = 0

    def omit(self, byte_count: int) -> None:
        """Count middle bytes known to lie here (after a full head) as omitted."""
        self._omitted += max(0, byte_count)

    def _push_tail(self, chunk: bytes) -> None:
        if self._tail_budget == 0:
            self._omitted += len(chunk)
            return
        if len(chunk) >= self._tail_budget:
            # One chunk covers the whole tail budget: it replaces everything held there.
            self._omitted += self._tail_len + len(chunk) - self._tail_budget
            self._tail.clear()
            self._tail.append(chunk[len(chunk) - self._tail_budget :])
            self._tail_len = self._tail_budget
            return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        excess = self._tail_len - self._tail_budget
        while excess > 0:
            oldest = self._tail[0]
            if len(oldest) <= excess:
                self._tail.popleft()
                cut = len(oldest)
            else:
                self._tail[0] = oldest[excess:]
                cut = excess
            self._tail_len -= cut
            self._omitted += cut
            excess -= cut

    def snapshot(self) -> HeadTailSnapshot:
        """The retained output without resetting."""
        return HeadTailSnapshot(bytes(self._head), b"".join(self._tail), self._omitted)

    def drain(self) -> HeadTailSnapshot:
        """The retained output; the buffer starts over empty."""
        snap = self.snapshot()
        self._head = bytearray()
        self._head_closed = False
        self._tail.clear()
        self._tail_len = 0
        self._omitted = 0
        return snap


def joined(
    first: HeadTailSnapshot,
    second: HeadTailSnapshot,
    max_bytes: int = UNIFIED_EXEC_OUTPUT_MAX_BYTES,
) -> HeadTailSnapshot:
    """What one buffer would hold for `first`'s bytes followed by `second`'s.

    Exact without the omitted bytes: a snapshot omits only once its head is full, so its
    omitted middle lies where the joined buffer's head is full too, and its tail (then a
    whole tail budget) ends where the joined tail ends.
    """
    buffer = HeadTailBuffer(max_bytes)
    for snap in (first, second):
        buffer.push(snap.head)
        buffer.omit(snap.omitted_bytes)
        buffer.push(snap.tail)
    return buffer.snapshot()


@dataclass(frozen=True, slots=True)
class DrainedCapture:
    """One drain of a capture kept elsewhere (an exec-server's SessionOutputService)."""

    snapshot: HeadTailSnapshot
    # The seq and end offset of the last output chunk the drain covered.
    through_seq: int
    through_offset: int
    # The process's state when drained: exited with a code or signal, or lost (`failure`).
    exit_code: int | None
    signal: int | None
    failure: str
    exited: bool
    # The output ended and this drain holds the last of it.
    closed: bool
