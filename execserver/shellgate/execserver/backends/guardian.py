"""The daemon side of the group guardian: a helper that kills registered groups at EOF."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = str(Path(__file__).with_name("_guardian.py"))


class GroupGuardian:
    """Registers process groups with a long-lived guardian process (started lazily, once).

    The guardian holds the read end of a pipe whose only write end lives in this process;
    when the daemon dies for any reason, the kernel closes that end and the guardian
    SIGKILLs every group still registered, grandchildren included.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._write_fd: int | None = None

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
        return write_fd

    def _send(self, line: str) -> None:
        fd = self._ensure()
        if fd is None:
            return
        # A few bytes on a pipe the guardian drains continuously: this never blocks long.
        with contextlib.suppress(OSError):
            os.write(fd, line.encode())

    def register(self, pgid: int) -> None:
        """Protect a group: it is SIGKILLed if the daemon dies before unregister."""
        self._send(f"+{pgid}\n")

    def unregister(self, pgid: int) -> None:
        """The group is gone (its id may be reused): stop protecting it."""
        if self._write_fd is not None:
            self._send(f"-{pgid}\n")

    def close(self) -> None:
        """Close the pipe (the guardian kills what is still registered) and reap it."""
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
