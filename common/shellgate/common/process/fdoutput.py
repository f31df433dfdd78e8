"""Output of a local process's fds: reader callbacks, a bounded buffer, coalesced chunks."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections import deque
from collections.abc import AsyncIterator

from shellgate.common.process.base import OutputChunk, Stream

# Linux's default pipe capacity (16 pages).
_DEFAULT_PIPE_BYTES = 65_536


class FdOutput:
    """Reads pipes / a PTY master on the loop and hands out chunks in read order.

    Reads are pulled by the consumer: while it is busy (sending, or paced by a slow
    follower) nothing reads, so output accumulates in the kernel pipe and the next pull
    takes it in one read of up to `max_chunk_bytes` (one syscall, no join copy) instead
    of one read per small write of the producer. Reader callbacks are registered only
    while the consumer waits for data, and while `wait_eof` drains; their reads go to a
    buffer that pauses reading at `buffer_bytes`, so the child blocks on a full pipe
    instead of our memory growing.
    """

    def __init__(
        self,
        fds: list[tuple[int, Stream]],
        *,
        read_bytes: int,
        max_chunk_bytes: int,
        buffer_bytes: int,
        keep_open: frozenset[int] = frozenset(),
        grow_pipes_to: int = 0,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        # Pipes still at their default size, grown to grow_pipes_to on the first full read.
        self._growable = (
            {fd for fd, _ in fds if fd not in keep_open} if grow_pipes_to else set()
        )
        self._grow_to = grow_pipes_to
        self._read_bytes = read_bytes
        self._max_chunk = max(max_chunk_bytes, read_bytes)
        self._high = buffer_bytes
        self._keep_open = keep_open
        self._buf: deque[tuple[Stream, bytes]] = deque()
        self._buffered = 0
        self._open: dict[int, Stream] = dict(fds)
        # Whether reader callbacks are registered for every open fd.
        self._watching = False
        # wait_eof in progress: callbacks keep reading (bounded) without a consumer.
        self._draining = False
        self._wakeup: asyncio.Future[None] | None = None
        self._eof = asyncio.Event()
        for fd, _stream in fds:
            os.set_blocking(fd, False)
        if not fds:
            self._eof.set()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _watch(self) -> None:
        if not self._watching:
            self._watching = True
            for fd, stream in self._open.items():
                self._loop.add_reader(fd, self._ready, fd, stream)

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            for fd in self._open:
                self._loop.remove_reader(fd)

    def _read(self, fd: int, stream: Stream, size: int) -> bool:
        """One non-blocking read into the buffer; False when nothing was there."""
        try:
            data = os.read(fd, size)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            # EIO on a PTY master once every slave fd is closed; any read error ends the
            # stream like EOF.
            data = b""
        if data:
            self._buf.append((stream, data))
            self._buffered += len(data)
            if len(data) >= _DEFAULT_PIPE_BYTES and fd in self._growable:
                self._grow(fd)
        else:
            self._close(fd)
        return True

    def _grow(self, fd: int) -> None:
        # A read that emptied a full default-size pipe means a fast producer: a bigger pipe
        # lets it run ahead while the loop is busy sending, so each read (and message)
        # carries more. Done lazily because resizing (and later freeing) the pipe's ring
        # costs tens of microseconds, wasted on the many commands that print little.
        self._growable.discard(fd)
        with contextlib.suppress(OSError):  # best effort, capped by pipe-max-size
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, self._grow_to)

    def _ready(self, fd: int, stream: Stream) -> None:
        if fd not in self._open:
            return
        self._read(fd, stream, self._read_bytes)
        # The consumer was waiting: it pulls the rest itself once it ran. A drain keeps
        # reading until the buffer bound.
        if not self._draining or self._buffered >= self._high:
            self._unwatch()
        self._wake()

    def _close(self, fd: int) -> None:
        if self._open.pop(fd, None) is None:
            return
        if self._watching:
            self._loop.remove_reader(fd)
        if fd not in self._keep_open:
            with contextlib.suppress(OSError):
                os.close(fd)
        if not self._open:
            self._watching = False
            self._eof.set()

    def _pull(self) -> None:
        """Read each open fd once (non-blocking), as much as a chunk may carry."""
        for fd, stream in list(self._open.items()):
            self._read(fd, stream, self._max_chunk)

    def _take(self) -> OutputChunk:
        stream, first = self._buf.popleft()
        parts = [first]
        size = len(first)
        while self._buf and self._buf[0][0] is stream and size + len(self._buf[0][1]) <= self._max_chunk:
            data = self._buf.popleft()[1]
            parts.append(data)
            size += len(data)
        self._buffered -= size
        if self._draining and self._buffered < self._high // 2:
            self._watch()
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
                self._pull()
                if self._buf or not self._open:
                    continue
                self._watch()
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
        """Wait until every fd reached EOF (reading on, bounded); False on timeout."""
        self._draining = True
        if self._buffered < self._high:
            self._watch()
        try:
            await asyncio.wait_for(self._eof.wait(), timeout_ms / 1000)
        except TimeoutError:
            return False
        finally:
            self._draining = False
        return True

    def abandon(self) -> None:
        """Stop reading every fd now (buffered chunks are still handed out)."""
        for fd in list(self._open):
            self._close(fd)
        self._wake()
