"""Output of a local process's fds: reader callbacks, a bounded buffer, coalesced chunks."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator

from shellgate.execserver.backends.base import OutputChunk, Stream


class FdOutput:
    """Reads pipes / a PTY master on the loop and hands out chunks in read order.

    One reader callback per fd appends to a buffer (no task or future per read). When the
    buffer holds `buffer_bytes`, reading pauses, so the kernel pipe fills and the child
    blocks instead of our memory growing; consumption resumes it. Consecutive reads of the
    same stream are joined into one chunk of at most `max_chunk_bytes`, which cuts the
    per-chunk cost downstream (seq, retention, one gRPC message each) on fast producers.
    """

    def __init__(
        self,
        fds: list[tuple[int, Stream]],
        *,
        read_bytes: int,
        max_chunk_bytes: int,
        buffer_bytes: int,
        keep_open: frozenset[int] = frozenset(),
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._read_bytes = read_bytes
        self._max_chunk = max(max_chunk_bytes, read_bytes)
        self._high = buffer_bytes
        self._keep_open = keep_open
        self._buf: deque[tuple[Stream, bytes]] = deque()
        self._buffered = 0
        self._open: dict[int, Stream] = dict(fds)
        self._paused = False
        self._wakeup: asyncio.Future[None] | None = None
        self._eof = asyncio.Event()
        for fd, stream in fds:
            os.set_blocking(fd, False)
            self._loop.add_reader(fd, self._ready, fd, stream)
        if not fds:
            self._eof.set()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _ready(self, fd: int, stream: Stream) -> None:
        try:
            data = os.read(fd, self._read_bytes)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            # EIO on a PTY master once every slave fd is closed; any read error ends the
            # stream like EOF.
            data = b""
        if data:
            self._buf.append((stream, data))
            self._buffered += len(data)
            if self._buffered >= self._high and not self._paused:
                self._paused = True
                for open_fd in self._open:
                    self._loop.remove_reader(open_fd)
        else:
            self._close(fd)
        self._wake()

    def _close(self, fd: int) -> None:
        if self._open.pop(fd, None) is None:
            return
        self._loop.remove_reader(fd)
        if fd not in self._keep_open:
            with contextlib.suppress(OSError):
                os.close(fd)
        if not self._open:
            self._eof.set()

    def _resume(self) -> None:
        if self._paused and self._buffered < self._high // 2:
            self._paused = False
            for fd, stream in self._open.items():
                self._loop.add_reader(fd, self._ready, fd, stream)

    def _take(self) -> OutputChunk:
        stream, first = self._buf.popleft()
        parts = [first]
        size = len(first)
        while self._buf and self._buf[0][0] is stream and size + len(self._buf[0][1]) <= self._max_chunk:
            data = self._buf.popleft()[1]
            parts.append(data)
            size += len(data)
        self._buffered -= size
        self._resume()
        return OutputChunk(stream, parts[0] if len(parts) == 1 else b"".join(parts))

    async def chunks(self) -> AsyncIterator[OutputChunk]:
        """Yield chunks until every fd reached EOF (or was abandoned) and the buffer is empty."""
        try:
            while True:
                if self._buf:
                    yield self._take()
                    continue
                if not self._open:
                    return
                self._wakeup = self._loop.create_future()
                try:
                    await self._wakeup
                finally:
                    self._wakeup = None
        finally:
            # A consumer that stops early abandons the streams: closing our read ends lets
            # a writer that outlives the process see EPIPE instead of blocking forever.
            if self._open:
                self.abandon()

    async def wait_eof(self, timeout_ms: int) -> bool:
        """Wait until every fd reached EOF; False when timeout_ms passed first."""
        try:
            await asyncio.wait_for(self._eof.wait(), timeout_ms / 1000)
        except TimeoutError:
            return False
        return True

    def abandon(self) -> None:
        """Stop reading every fd now (buffered chunks are still handed out)."""
        for fd in list(self._open):
            self._close(fd)
        self._wake()
