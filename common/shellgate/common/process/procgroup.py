"""Process-group signalling and liveness from /proc (zombies count as gone)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable

from shellgate.common.process.group_snapshot import (
    SNAPSHOTS,
    GroupSnapshots,
    live_in_group,
)

# Bound on the descendant walk of the cheap liveness check (a fork bomb falls back to a scan).
_WALK_LIMIT = 256


def _group_exists(pgid: int) -> bool:
    """False when no process at all (zombie or not) is in the group: one syscall."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def group_members(pgid: int, *, snapshots: GroupSnapshots = SNAPSHOTS) -> list[int]:
    """Live (non-zombie) pids whose process group is pgid, from the shared snapshot.

    The snapshot may be up to its max age old, so a member forked since then is missed until
    the next refresh; every pid returned is re-read now (a member that died, or a pid reused
    outside the group, is dropped), the leader is always checked fresh, and an empty group is
    answered without any scan. Blocks while /proc is scanned: call off the event loop.
    """
    if not _group_exists(pgid):
        return []
    candidates = snapshots.members(pgid)
    if pgid not in candidates:
        candidates.insert(0, pgid)
    return [pid for pid in candidates if live_in_group(pid, pgid)]


def _children(pid: int) -> list[int]:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                out.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return out


def _live_descendant_in_group(root: int, pgid: int) -> bool:
    """A live member of pgid among root's descendants (bounded walk; proves presence only)."""
    pending, seen = _children(root), 0
    while pending and seen < _WALK_LIMIT:
        pid = pending.pop()
        seen += 1
        if live_in_group(pid, pgid):
            return True
        pending.extend(_children(pid))
    return False


def cheap_alive(pgid: int, snapshots: GroupSnapshots = SNAPSHOTS) -> bool | None:
    """True/False when a few reads answer whether pgid has a live member now; None when only
    a full scan can tell (e.g. the leader is a zombie and its children were reparented)."""
    if not _group_exists(pgid):
        return False
    if live_in_group(pgid, pgid) or _live_descendant_in_group(pgid, pgid):
        return True
    # A stale snapshot can name candidates, checked now; it never proves absence.
    latest = snapshots.latest
    if latest is not None and any(live_in_group(pid, pgid) for pid in latest.members(pgid)):
        return True
    return None


async def group_alive(
    pgid: int, *, snapshots: GroupSnapshots = SNAPSHOTS, clock: Callable[[], float] = time.monotonic
) -> bool:
    """Whether pgid has a live member now: cheap checks first, else a scan started after
    this call (shared with concurrent callers, on a worker thread)."""
    asked_at = clock()
    answer = cheap_alive(pgid, snapshots)
    if answer is not None:
        return answer
    fresh = await asyncio.to_thread(snapshots.members, pgid, taken_after=asked_at)
    return bool(fresh)


def signal_group(pgid: int, signo: int) -> bool:
    """Send signo to the group; False when no member exists any more."""
    try:
        os.killpg(pgid, signo)
    except ProcessLookupError:
        return False
    return True


Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
Alive = Callable[[int], Awaitable[bool]]
POLL_S = 0.02


async def kill_group(
    pgid: int,
    grace_ms: int,
    gone_timeout_ms: int,
    *,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
    members: Callable[[int], list[int]] | None = None,
    send: Callable[[int, int], bool] = signal_group,
) -> bool:
    """TERM the group, wait up to grace_ms, KILL, then wait until no member is alive.

    Returns False when members remain gone_timeout_ms after the KILL. The clock, sleep,
    liveness probe (`members`; default: group_alive, never a stale "gone") and signal
    sender are injectable so the escalation is tested without real time or processes.
    """
    alive: Alive = group_alive if members is None else _alive_from(members)
    if not await alive(pgid):
        return True
    send(pgid, signal.SIGTERM)
    if await _wait_gone(pgid, grace_ms, clock, sleep, alive):
        return True
    # Members that ignore or outlive TERM (and grandchildren holding our pipes) end here.
    send(pgid, signal.SIGKILL)
    return await _wait_gone(pgid, gone_timeout_ms, clock, sleep, alive)


def _alive_from(members: Callable[[int], list[int]]) -> Alive:
    async def alive(pgid: int) -> bool:
        return bool(members(pgid))

    return alive


async def _wait_gone(pgid: int, timeout_ms: int, clock: Clock, sleep: Sleep, alive: Alive) -> bool:
    deadline = clock() + timeout_ms / 1000
    while True:
        if not await alive(pgid):
            return True
        if clock() >= deadline:
            return False
        await sleep(POLL_S)
