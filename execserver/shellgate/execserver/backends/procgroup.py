"""Process-group signalling and liveness from /proc (zombies count as gone)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path


def _stat_fields(pid: str) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    return text.rsplit(")", 1)[1].split()


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is pgid."""
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


async def kill_group(pgid: int, grace_ms: int, gone_timeout_ms: int) -> bool:
    """TERM the group, wait up to grace_ms, KILL, then wait until no member is alive."""
    if not group_members(pgid):
        return True
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_ms / 1000
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        await asyncio.sleep(0.02)
    # Members that ignore or outlive TERM (and grandchildren holding our pipes) end here.
    signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + gone_timeout_ms / 1000
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        await asyncio.sleep(0.02)
    return False
