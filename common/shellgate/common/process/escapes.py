"""Descendants that leave their command's process group (setsid, double fork) still die with it.

Killing a command's process group misses a descendant that called `setsid` and was
orphaned: it is in a session and group of its own, reparented to init. This backend's
process is therefore made a *child subreaper* (PR_SET_CHILD_SUBREAPER): an orphaned
descendant is reparented here instead. Such an orphan is told apart from the processes this
process started itself by its session (every command runs in a session of its own, never
this process's) and by the pids this backend tracks (command roots, the group guardian).

Each orphan is attributed to every command root that was running when it started (the
start times in /proc, in clock ticks since boot). Once all of those roots have ended, its
whole group is killed and it is reaped; while one still runs, its group is registered with
the group guardian, so the death of this process takes it down too. Sandboxed commands do
not need this (bubblewrap's PID namespace dies with the command), but it covers them too.

Residuals: an orphan created and this process SIGKILLed within one sweep interval survives
(it was never seen); an orphan that starts in the same clock tick a root ends may be
attributed to it alone. cgroup v2's `cgroup.kill` would close both, and is not available on
every host (this design needs only /proc and one prctl).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from shellgate.common.process.group_snapshot import stat_fields

_PR_SET_CHILD_SUBREAPER = 36
# Ended roots stay known this long (in clock ticks), so an orphan seen late is attributed.
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_KEEP_ENDED_TICKS = 60 * _CLK_TCK
_MAX_ENDED_ROOTS = 10_000
_log = logging.getLogger(__name__)


_process_reaps = False


def enable_escape_reaping() -> bool:
    """Make this process a child subreaper whose local backends reap escapes (daemons only).

    Process-wide and opt-in: the daemons' command lines call it. A process that also starts
    children of its own in new sessions (a test runner, an embedding application) must not:
    such a child, seen reparented here, could be taken for a command's escape.
    """
    global _process_reaps
    libc = ctypes.CDLL(None, use_errno=True)
    _process_reaps = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    if not _process_reaps:
        _log.warning("not a child subreaper: escaped descendants reparent to init")
    return _process_reaps


def disable_escape_reaping() -> None:
    """Undo enable_escape_reaping (for tests that turn it on around one router)."""
    global _process_reaps
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    _process_reaps = False


@dataclass(frozen=True)
class ProcStat:
    """The fields of /proc/<pid>/stat this module reads."""

    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int
    start_ticks: int


def proc_stat(pid: int) -> ProcStat | None:
    """/proc/<pid>/stat, or None when the process is gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    return ProcStat(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))


def _now_ticks() -> int:
    # /proc/<pid>/stat start times count clock ticks of CLOCK_BOOTTIME.
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


def _children(pid: int) -> set[int]:
    # An orphan is reparented to the subreaper's main thread (the thread group leader), so
    # its children file is the only one to read: the other threads' children are the roots
    # they spawned. One read per sweep instead of one per thread.
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return {int(p) for p in f.read().split()}
    except OSError:
        return set()


@dataclass
class _Root:
    start: int
    end: int | None = None


class EscapeReaper:
    """Finds orphaned descendants reparented here and kills them when their commands end."""

    def __init__(
        self,
        register: Callable[[int], None],
        unregister: Callable[[int], None],
        excluded: Callable[[], Iterable[int]],
    ) -> None:
        self._register, self._unregister, self._excluded = register, unregister, excluded
        # Spawner threads add roots while the loop sweeps: both under this lock. A zombie
        # child may be a root whose spawn has not been recorded yet, so nothing is reaped
        # or killed while a spawn is in flight (the next sweep catches up).
        self._lock = threading.Lock()
        self._spawning = 0
        self._roots: dict[int, _Root] = {}
        # Ended roots in the order they ended (kept a while for late orphans), and a count
        # of running ones: a spawn or a release then costs O(1), whatever the history.
        self._ended: deque[tuple[int, _Root]] = deque()
        self._running = 0
        self._sweep_due = False
        self._guarded: set[int] = set()
        # Orphans killed but not reaped yet: the next sweeps collect their exit status.
        self._dying: set[int] = set()
        self._me = os.getpid()
        self._my_sid = os.getsid(0)

    @contextlib.contextmanager
    def spawning(self) -> Iterator[int]:
        """Around a spawn and its `root_started`: sweeps leave every child alone meanwhile.

        Yields the clock tick before the spawn, the root's start for `root_started`.
        """
        # Taken before the fork, not at `root_started`: on a loaded box the spawning thread
        # may wait many ticks for the GIL after the fork while the command already starts
        # its escapes, and an orphan that seems older than every root is never killed.
        since = _now_ticks() - 1
        with self._lock:
            self._spawning += 1
        try:
            yield since
        finally:
            with self._lock:
                self._spawning -= 1

    def root_started(self, pid: int, since: int) -> None:
        """A command root (its own session and group) was spawned (any thread) at or after
        the tick `since` (what `spawning` yielded: a /proc read of the real start here would
        cost the spawn path more than the whole bookkeeping)."""
        start = since
        with self._lock:
            # A reused pid replaces an ended root (its deque entry no longer matches it).
            self._running += 1
            self._roots[pid] = _Root(start)

    def root_ended(self, pid: int) -> None:
        """A command root's group was killed and released; its orphans go at the next sweep."""
        with self._lock:
            root = self._roots.get(pid)
            if root is not None and root.end is None:
                root.end = _now_ticks()
                self._running -= 1
                self._ended.append((pid, root))
                # One more sweep is due even when nothing else runs.
                self._sweep_due = True

    @property
    def active(self) -> bool:
        """Whether a periodic sweep is worth its cost: a root runs, or an orphan is dying."""
        with self._lock:
            due = self._sweep_due or bool(self._dying) or self._running > 0
        return due and self.enabled

    @property
    def enabled(self) -> bool:
        """Whether this process reaps escapes (see enable_escape_reaping)."""
        return _process_reaps

    def sweep(self) -> None:
        """Reap gone orphans, guard live ones, kill those whose every root has ended."""
        if not self.enabled:
            return
        with self._lock:
            if self._spawning:
                return
            self._sweep_due = False
            excluded = set(self._excluded())
            children = [p for p in _children(self._me) - excluded if p not in self._roots]
            roots = list(self._roots.values()) if children else []
        for pid in children:
            stat = proc_stat(pid)
            if stat is None or stat.ppid != self._me or stat.sid == self._my_sid:
                continue
            if stat.state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                self._dying.discard(pid)
                self._unguard(stat.pgid)
                continue
            owners = [
                root for root in roots
                if root.start <= stat.start_ticks and (root.end is None or stat.start_ticks <= root.end)
            ]  # fmt: skip
            if not owners:
                continue  # not started by any command we know of: leave it alone
            if any(root.end is None for root in owners):
                if stat.pgid not in self._guarded and stat.pgid != self._me:
                    self._register(stat.pgid)
                    self._guarded.add(stat.pgid)
                continue
            self._kill(stat)
        # A dying orphan no longer listed was reaped (by a later sweep or otherwise).
        self._dying &= set(children)
        self._forget_old_roots()

    def _kill(self, stat: ProcStat) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if stat.pgid not in (self._me, os.getpgid(0)):
                os.killpg(stat.pgid, signal.SIGKILL)
            os.kill(stat.pid, signal.SIGKILL)
        self._dying.add(stat.pid)
        self._unguard(stat.pgid)

    def _unguard(self, pgid: int) -> None:
        if pgid in self._guarded:
            self._guarded.discard(pgid)
            self._unregister(pgid)

    def _forget_old_roots(self) -> None:
        with self._lock:
            self._forget_old_roots_locked()

    def _forget_old_roots_locked(self) -> None:
        now = _now_ticks()
        while self._ended:
            pid, oldest = self._ended[0]
            stale = now - (oldest.end or now) > _KEEP_ENDED_TICKS
            if not stale and len(self._ended) <= _MAX_ENDED_ROOTS:
                break
            self._ended.popleft()
            if self._roots.get(pid) is oldest:
                del self._roots[pid]
