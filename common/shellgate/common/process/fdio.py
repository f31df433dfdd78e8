"""Non-blocking reads and writes of raw fds (pipes and PTY masters) on the running loop."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import AsyncIterator


async def _wait_fd(fd: int, *, write: bool) -> None:
    """Wait until fd is readable (or writable); cancellation removes the watcher."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not fut.done():
            fut.set_result(None)

    if write:
        loop.add_writer(fd, ready)
    else:
        loop.add_reader(fd, ready)
    try:
        await fut
    finally:
        if write:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


async def read_chunks(fd: int, chunk_bytes: int) -> AsyncIterator[bytes]:
    """Yield chunks read from fd until EOF (a PTY master's EIO counts as EOF)."""
    os.set_blocking(fd, False)
    while True:
        try:
            data = os.read(fd, chunk_bytes)
        except BlockingIOError:
            await _wait_fd(fd, write=False)
            continue
        except OSError as exc:
            # Linux reports EIO on the master once every slave fd is closed.
            if exc.errno == errno.EIO:
                return
            raise
        if not data:
            return
        yield data


async def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a non-blocking fd, waiting for room as needed."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await _wait_fd(fd, write=True)
            continue
        view = view[written:]
