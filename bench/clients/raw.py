"""The physical floor: fork/exec with asyncio, pipes drained, and a shell pipe for bytes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from bench.clients.common import RunTimes

READ_BYTES = 256 * 1024


async def run(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> RunTimes:
    """Spawn argv with piped stdout/stderr (as the servers do), drain both, wait for exit."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(env), cwd=cwd, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None

    async def drain(stream: asyncio.StreamReader) -> int:
        total = 0
        while chunk := await stream.read(READ_BYTES):
            total += len(chunk)
        return total

    counts = await asyncio.gather(drain(proc.stdout), drain(proc.stderr))
    code = await proc.wait()
    t = time.perf_counter() - t0
    return RunTimes(t, t, sum(counts), code)


async def shell_pipe(script: str, env: Mapping[str, str], cwd: str) -> float:
    """Seconds for `sh -c script` (e.g. `head -c N /dev/zero | cat >/dev/null`)."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", script, stdin=asyncio.subprocess.DEVNULL, env=dict(env), cwd=cwd,
        start_new_session=True,
    )  # fmt: skip
    if await proc.wait() != 0:
        raise RuntimeError(f"{script!r} failed")
    return time.perf_counter() - t0
