"""A read-only copy of a unified-exec session's output for watchers (the operator console).

The model's own output path (the session's head/tail buffer, drained by each poll) is
never touched: a tap gets its own copy of every chunk while it is attached. Each tap is
bounded and drops its *oldest* chunks when its watcher is slow, so a stalled browser can
neither grow memory nor slow the session down. With no tap attached nothing is copied.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

__all__ = ["OutputTap"]

# Chunks one tap holds before it drops the oldest (each chunk is at most a pipe read).
DEFAULT_TAP_CHUNKS = 256
# A watcher joining late starts with at most this much of the not-yet-polled output.
MAX_INITIAL_BYTES = 64 * 1024


class OutputTap:
    """One watcher's bounded queue of output chunks (drop-oldest), closed at the output's end."""

    def __init__(self, initial: bytes = b"", max_chunks: int = DEFAULT_TAP_CHUNKS) -> None:
        self._chunks: deque[bytes] = deque(maxlen=max_chunks)
        self._ready = asyncio.Event()
        if initial:
            self._chunks.append(initial[-MAX_INITIAL_BYTES:])
            self._ready.set()
        self.dropped_chunks = 0
        self.closed = False

    def push(self, data: bytes) -> None:
        """Queue a copy of a chunk; the oldest one goes when the tap is full."""
        if self.closed or not data:
            return
        if len(self._chunks) == self._chunks.maxlen:
            self.dropped_chunks += 1
        self._chunks.append(data)
        self._ready.set()

    def close(self) -> None:
        """The output ended: `next` returns what is left, then None."""
        self.closed = True
        self._ready.set()

    async def next(self, timeout_s: float) -> bytes | None:
        """The chunks queued so far, joined (b"" after `timeout_s` with none); None once
        the tap is closed and empty."""
        if not self._chunks and not self.closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout_s)
        self._ready.clear()
        if not self._chunks:
            return None if self.closed else b""
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data
