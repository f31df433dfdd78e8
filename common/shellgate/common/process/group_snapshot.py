"""One /proc scan shared by every caller: process group id → live (non-zombie) members."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Clock = Callable[[], float]

# How old a snapshot may be for callers that accept a slightly stale view (the idle-input
# probe). A process that joined the group after the scan is missed for at most this long.
MAX_AGE_S = 0.2


def stat_fields(pid: int | str) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (index 0 = state, 2 = pgrp)."""
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


def live_in_group(pid: int | str, pgid: int) -> bool:
    """The process exists, is not a zombie and is in group pgid (read now)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid


@dataclass(frozen=True)
class GroupSnapshot:
    """Live members per process group, as one /proc scan saw them."""

    # clock() when the scan started: nothing that was gone before then is listed.
    taken_at: float
    groups: Mapping[int, tuple[int, ...]]

    def members(self, pgid: int) -> list[int]:
        """Live pids of group pgid in this snapshot."""
        return list(self.groups.get(pgid, ()))


def scan_groups(clock: Clock = time.monotonic) -> GroupSnapshot:
    """Read every /proc/<pid>/stat once and group the live processes by pgid."""
    taken_at = clock()
    groups: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is None or fields[0] in ("Z", "X"):
            continue
        groups.setdefault(int(fields[2]), []).append(int(entry))
    return GroupSnapshot(taken_at, {pgid: tuple(pids) for pgid, pids in groups.items()})


class GroupSnapshots:
    """The latest snapshot, refreshed by at most one scan at a time (thread-safe).

    Callers run on worker threads (asyncio.to_thread); concurrent requests for a fresh
    snapshot wait for the scan in flight instead of each scanning /proc, so N callers cost
    one O(processes) scan per refresh rather than N of them.
    """

    def __init__(
        self,
        max_age_s: float = MAX_AGE_S,
        *,
        clock: Clock = time.monotonic,
        scan: Callable[[Clock], GroupSnapshot] = scan_groups,
    ) -> None:
        """Snapshots older than max_age_s are refreshed on the next request."""
        self._max_age_s = max_age_s
        self._clock = clock
        self._scan = scan
        self._latest: GroupSnapshot | None = None
        self._lock = threading.Lock()
        self.scans = 0  # how many scans ran (tests and diagnostics)

    @property
    def latest(self) -> GroupSnapshot | None:
        """The last snapshot taken, however old (a hint only: never proof of absence)."""
        return self._latest

    def get(self, *, taken_after: float | None = None) -> GroupSnapshot:
        """A snapshot no older than max_age, or (taken_after given) whose scan started at or
        after taken_after; blocks while another thread scans."""
        cutoff = taken_after if taken_after is not None else self._clock() - self._max_age_s
        latest = self._latest
        if latest is not None and latest.taken_at >= cutoff:
            return latest
        with self._lock:
            # The scan that held the lock may have started after our cutoff: share it.
            latest = self._latest
            if latest is not None and latest.taken_at >= cutoff:
                return latest
            latest = self._scan(self._clock)
            self.scans += 1
            self._latest = latest
            return latest

    def members(self, pgid: int, *, taken_after: float | None = None) -> list[int]:
        """Live pids of group pgid from a snapshot that is fresh enough (see get)."""
        return self.get(taken_after=taken_after).members(pgid)


# The daemon-wide instance: every probe in the process shares its scans.
SNAPSHOTS = GroupSnapshots()
