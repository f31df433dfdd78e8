"""The router's pid file, `<runtime dir>/router-PORT.pid`, beside its generated token file.

`shellgate serve` writes it once it listens (0600) and removes it at exit; `shellgate stop`
and `shellgate status` read it. A file is believed only when this user owns it, nobody else
can write it, and the pid it names is still the process that wrote it: alive, this user's,
started at the recorded time (so a reused pid is not), with a shellgate router's command line
(`proctitle.is_router_cmdline`). Anything else is a stale file — reported and removed — and no
process is ever signalled on its word.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from shellgate.common.local_token import ensure_runtime_dir, runtime_dir
from shellgate.router.cli.proctitle import is_router_cmdline


def pid_path(port: int) -> Path:
    """The pid file of the router listening on `port`."""
    return runtime_dir() / f"router-{port}.pid"


def log_path(port: int) -> Path:
    """Where `shellgate serve --detach` keeps the log of the router on `port`."""
    return runtime_dir() / f"router-{port}.log"


@dataclass(frozen=True)
class PidRecord:
    """What a running router publishes about itself."""

    pid: int
    listen: str  # host:port as bound
    started: int  # /proc/PID/stat starttime: with the pid, names one process for good
    log: str | None  # the detached log file; None: stderr of whoever started it
    grace_ms: int  # the router's shutdown grace: how long a SIGTERM may take


def process_start(pid: int) -> int | None:
    """The start time of `pid` in clock ticks since boot, or None when it is gone (or a zombie)."""
    try:
        # The comm field may hold spaces and parentheses: fields are counted after its end.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def write_pid_file(record: PidRecord, port: int) -> Path:
    """Publish `record` for `port` (0600, replaced atomically); returns the path."""
    ensure_runtime_dir()
    target = pid_path(port)
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(asdict(record)) + "\n").encode())
    finally:
        os.close(fd)
    os.replace(temporary, target)
    return target


def remove_pid_file(port: int, pid: int) -> None:
    """Remove the pid file of `port` if it still names `pid` (a newer router's file stays)."""
    path = pid_path(port)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if json.loads(path.read_text())["pid"] == pid:
            path.unlink()


@dataclass(frozen=True)
class Running:
    """A live router of this user, as its pid file describes it."""

    record: PidRecord
    path: Path


@dataclass(frozen=True)
class NotRunning:
    """No router for the port; `reason` says why (no file, or a stale one removed)."""

    reason: str


@dataclass(frozen=True)
class Untrusted:
    """A pid file that is not this user's own: nothing is read from it, nothing signalled."""

    reason: str


def find_router(port: int) -> Running | NotRunning | Untrusted:
    """The router that published its pid file for `port`, after every identity check."""
    path = pid_path(port)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return NotRunning(f"no pid file {path}")
    except OSError as exc:
        return Untrusted(f"cannot read {path}: {exc.strerror}")
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        return Untrusted(f"{path} is not a regular file owned by this user")
    if info.st_mode & 0o022:
        return Untrusted(f"{path} is writable by others (mode {stat.S_IMODE(info.st_mode):04o})")
    try:
        text = path.read_text()
        data = json.loads(text)
        record = PidRecord(
            int(data["pid"]), str(data["listen"]), int(data["started"]),
            None if data["log"] is None else str(data["log"]), int(data["grace_ms"]),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return _stale(port, None, "its content is not a pid record")
    why = not_this_router(record)
    if why is not None:
        return _stale(port, record.pid, why)
    return Running(record, path)


def not_this_router(record: PidRecord) -> str | None:
    """Why `record.pid` is no longer the router that wrote the record, or None if it is."""
    pid = record.pid
    start = process_start(pid)
    if start is None:
        return f"pid {pid} has exited"
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid} has exited"
    if owner != os.getuid():
        return f"pid {pid} is now another user's process"
    if start != record.started:
        return f"pid {pid} is now another process"
    if not is_router_cmdline(cmdline):
        return f"pid {pid} is not a shellgate router"
    return None


def _stale(port: int, pid: int | None, why: str) -> NotRunning:
    """Remove a stale pid file (unless a new router replaced it meanwhile) and say so."""
    if pid is not None:
        remove_pid_file(port, pid)
    else:
        with contextlib.suppress(OSError):
            pid_path(port).unlink()
    return NotRunning(f"stale pid file {pid_path(port)} removed: {why}")
