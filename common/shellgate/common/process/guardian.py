"""The daemon side of the group guardian: a helper that kills registered groups at EOF."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

_SCRIPT = str(Path(__file__).with_name("_guardian.py"))
log = logging.getLogger(__name__)


class GroupGuardian:
    """Registers process groups with a long-lived guardian process (started lazily).

    The guardian holds the read end of a pipe whose only write end lives in this process;
    when the daemon dies for any reason, the kernel closes that end and the guardian sends
    every group still registered the parent-death signal, SIGTERM, then SIGKILL after a
    short grace, grandchildren included. This is the only parent-death mechanism: a
    per-child PR_SET_PDEATHSIG needs an extra exec per spawn and covers only the direct
    child. So the guardian itself is watched: if it dies, a new one is started at once
    (from the event loop, or at the next registration) and given every group still
    registered. Registration is thread-safe: spawner threads register the groups they
    start before handing them to the loop.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._write_fd: int | None = None
        self._groups: set[int] = set()
        self._watches: dict[int, int] = {}  # guardian pid -> its pidfd, read by the loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.RLock()
        self._closed = False

    def _ensure(self) -> int | None:
        if self._write_fd is not None:
            return self._write_fd
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        try:
            # Own session: a Ctrl-C or group signal aimed at the daemon does not reach it.
            # Empty env: it is no child of any request and must not carry their markers.
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _SCRIPT],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                close_fds=True,
                start_new_session=True,
            )
        except OSError:
            os.close(write_fd)
            return None
        finally:
            os.close(read_fd)
        self._write_fd = write_fd
        self._watch_exit()
        if self._groups:
            # A replacement guardian: protect again everything the dead one knew about.
            with contextlib.suppress(OSError):
                os.write(write_fd, "".join(f"+{g}\n" for g in self._groups).encode())
        return write_fd

    @property
    def pids(self) -> frozenset[int]:
        """Pids of the guardian processes this side started and still watches."""
        with self._lock:
            current = {self._proc.pid} if self._proc is not None else set()
            return frozenset(current | set(self._watches))

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch the guardian from this loop (call on the loop's thread)."""
        self._loop = loop

    def _watch_exit(self) -> None:
        loop, proc = self._loop, self._proc
        if loop is None or proc is None or loop.is_closed():
            return  # no loop (tests, shutdown): the next registration notices instead
        loop.call_soon_threadsafe(self._add_watch, proc)

    def _add_watch(self, proc: subprocess.Popen[bytes]) -> None:
        # Watches are only touched on the loop thread (this, the exit callback, detach_loop).
        loop = self._loop
        if proc is not self._proc or proc.pid in self._watches or loop is None:
            return
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            return
        self._watches[proc.pid] = pidfd
        loop.add_reader(pidfd, self._guardian_exited, proc)

    def _unwatch(self, pid: int) -> None:
        pidfd = self._watches.pop(pid, None)
        if pidfd is not None:
            if self._loop is not None:
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(pidfd)
            os.close(pidfd)

    def _guardian_exited(self, proc: subprocess.Popen[bytes]) -> None:
        self._unwatch(proc.pid)
        with self._lock:
            # A guardian already replaced (a failed write noticed first) needs nothing more.
            if proc is self._proc and not self._closed:
                self._restart("exited")

    def _restart(self, why: str) -> None:
        fd, self._write_fd = self._write_fd, None
        if fd is not None:
            os.close(fd)
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
        log.warning(
            "group guardian %s (%s); starting a new one for %d groups",
            why, proc.returncode if proc is not None else "?", len(self._groups),
        )  # fmt: skip
        self._ensure()

    def _send_locked(self, line: str) -> None:
        fd = self._ensure()
        if fd is None:
            return
        # A few bytes on a pipe the guardian drains continuously: this never blocks long.
        try:
            os.write(fd, line.encode())
        except BrokenPipeError:
            # The guardian died before its exit was noticed: the restart re-sends all.
            self._restart("is gone")
        except OSError:
            pass

    def register(self, pgid: int) -> None:
        """Protect a group: it is signalled (TERM, then KILL) if the daemon dies first."""
        with self._lock:
            self._groups.add(pgid)
            self._send_locked(f"+{pgid}\n")

    def unregister(self, pgid: int) -> None:
        """The group is gone (its id may be reused): stop protecting it."""
        with self._lock:
            self._groups.discard(pgid)
            if self._write_fd is not None:
                self._send_locked(f"-{pgid}\n")

    def detach_loop(self) -> None:
        """Stop watching the guardian from the event loop (call on the loop before close)."""
        for pid in list(self._watches):
            self._unwatch(pid)
        self._loop = None

    def close(self) -> None:
        """Close the pipe (the guardian kills what is still registered) and reap it."""
        with self._lock:
            self._closed = True
            fd, self._write_fd = self._write_fd, None
        if fd is not None:
            os.close(fd)
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
