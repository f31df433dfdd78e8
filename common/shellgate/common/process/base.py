"""The one process-backend protocol every exec-server backend implements."""

from __future__ import annotations

import enum
import signal as _signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class Stream(enum.Enum):
    """Which output stream a chunk came from (`pty` carries both streams of a tty)."""

    STDOUT = "stdout"
    STDERR = "stderr"
    PTY = "pty"


class Signal(enum.Enum):
    """Signals a caller may send to a process group."""

    INTERRUPT = _signal.SIGINT
    TERMINATE = _signal.SIGTERM
    KILL = _signal.SIGKILL
    HANGUP = _signal.SIGHUP


@dataclass(frozen=True)
class SpawnRequest:
    """What to run: argv directly (Direct mode), cwd, the complete child env, tty or pipes."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    tty: bool = False
    rows: int = 24
    cols: int = 80
    # Pipes only: a writable stdin when true, /dev/null otherwise. A tty is always writable.
    stdin_open: bool = False
    # argv[0] as the program sees it; None keeps argv[0].
    arg0: str | None = None
    # (st_dev, st_ino) of the directory approved for this command (`process/cwd_pin`): the
    # child starts in it or not at all. None: no approval pinned a directory.
    cwd_identity: tuple[int, int] | None = None


@dataclass(frozen=True)
class OutputChunk:
    """Bytes read from one stream, in read order."""

    stream: Stream
    data: bytes
    # Output bytes that were lost just before this chunk (a remote daemon evicted them
    # before this follower read them); they count as omitted, never as shown.
    omitted_before: int = 0


@dataclass(frozen=True)
class ExitStatus:
    """How a process ended: an exit code, a signal, or the environment was lost."""

    code: int | None = None
    signal: int | None = None
    # Set when the backend lost the environment (e.g. SSH connection dropped): the real
    # outcome is unknown.
    environment_lost: str | None = None

    @property
    def shell_code(self) -> int:
        """The exit code a shell would report: code, 128 + signo, or -1 when unknown."""
        if self.code is not None:
            return self.code
        if self.signal is not None:
            return 128 + self.signal
        return -1


@runtime_checkable
class ProcessHandle(Protocol):
    """A started process; owned by whoever called `Backend.start` until `terminate`."""

    @property
    def pid(self) -> int | None:
        """Host pid of the process (None when not observable, e.g. remote)."""

    @property
    def pgid(self) -> int | None:
        """Process group id (local) or None."""

    def output(self) -> AsyncIterator[OutputChunk]:
        """Yield output chunks until every stream reached EOF; call once."""

    async def write(self, data: bytes) -> None:
        """Write to stdin (or the PTY); raises StdinClosedError when not writable."""

    async def close_stdin(self) -> None:
        """Send EOF on stdin (pipes) or ^D (PTY)."""

    async def resize(self, rows: int, cols: int) -> None:
        """Resize the PTY; raises NotATtyError for pipes."""

    async def signal(self, sig: Signal) -> None:
        """Send sig to the whole process group; raises ProcessExitedError once exited."""

    async def wait(self) -> ExitStatus:
        """Wait for the exit and return the status (may be awaited many times)."""

    async def terminate(self) -> None:
        """TERM the group, wait the grace period, KILL, and return once all are gone."""


@runtime_checkable
class Backend(Protocol):
    """Spawns processes in one environment (this host, or a host over SSH)."""

    @property
    def name(self) -> str:
        """`local` or `ssh`."""

    async def start(self, request: SpawnRequest) -> ProcessHandle:
        """Spawn; raises SpawnError (with the OS error text) when nothing started."""

    async def aclose(self) -> None:
        """Terminate every process this backend started and release connections."""
