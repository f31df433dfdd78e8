"""Catch-up reads by seq with a bounded long poll (shared by gRPC Read and process/read)."""

from __future__ import annotations

import asyncio
import contextlib

from shellgate.common.process.retention import ReadResult
from shellgate.execserver.managed import ManagedProcess


async def read_retained(
    proc: ManagedProcess, after: int, max_bytes: int, wait_ms: int
) -> ReadResult:
    """Retained output after `after`, waiting up to wait_ms for something new to report."""
    ret = proc.retention

    def ready() -> bool:
        unseen_exit = ret.exited_seq is not None and after < ret.exited_seq
        return bool(ret.chunks_after(after)) or proc.closed or unseen_exit

    if wait_ms and not ready():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_ms / 1000):
                while not ready():
                    await proc.changed.wait()
    return ret.read(after, max_bytes)
