"""Process-group signalling and liveness from /proc (zombies count as gone)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable


def _stat_fields(pid: str) -> list[str] | None:
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # The command name may hold spaces and parentheses: split after the last ')'.
    return text.rsplit(b")", 1)[1].decode().split()


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is pgid."""
    # Cheap exit first: no process at all (zombie or not) is in the group.
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        # fields[0] = state, fields[2] = pgrp (stat fields 3 and 5).
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def signal_group(pgid: int, signo: int) -> bool:
    """Send signo to the group; False when no member exists any more."""
    try:
        os.killpg(pgid, signo)
    except ProcessLookupError:
        return False
    return True


Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
POLL_S = 0.02


async def kill_group(
    pgid: int,
    grace_ms: int,
    gone_timeout_ms: int,
    *,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
    members: Callable[[int], list[int]] = group_members,
    send: Callable[[int, int], bool] = signal_group,
) -> bool:
    """TERM the group, wait up to grace_ms, KILL, then wait until no member is alive.

    Returns False when members remain gone_timeout_ms after the KILL. The clock, sleep,
    liveness probe and signal sender are injectable so the escalation is tested without
    real time passing or real processes.
    """
    if not members(pgid):
        return True
    send(pgid, signal.SIGTERM)
    if await _wait_gone(pgid, grace_ms, clock, sleep, members):
        return True
    # Members that ignore or outlive TERM (and grandchildren holding our pipes) end here.
    send(pgid, signal.SIGKILL)
    return await _wait_gone(pgid, gone_timeout_ms, clock, sleep, members)


async def _wait_gone(
    pgid: int, timeout_ms: int, clock: Clock, sleep: Sleep, members: Callable[[int], list[int]]
) -> bool:
    deadline = clock() + timeout_ms / 1000
    while True:
        if not members(pgid):
            return True
        if clock() >= deadline:
            return False
        await sleep(POLL_S)
