"""What a listening `shellgate serve` leaves for `shellgate stop` and `shellgate status`.

Once the port is known: the process title, the detached log moved to its fixed name
(`<runtime dir>/router-PORT.log`, the previous run's kept as `router-PORT.log.1`), and the
pid file (`pidfile.py`). At exit the pid file goes; the log stays for reading.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from shellgate.router.cli.pidfile import (
    PidRecord,
    log_path,
    process_start,
    remove_pid_file,
    write_pid_file,
)
from shellgate.router.cli.proctitle import set_router_title

log = logging.getLogger(__name__)


@dataclass
class RunFiles:
    """The pid file this router published (if it could) and its detached log."""

    port: int
    pid_file: Path | None
    log: Path | None

    def withdraw(self) -> None:
        """Remove the pid file at exit (a newer router's file for the port stays)."""
        if self.pid_file is not None:
            remove_pid_file(self.port, os.getpid())
            self.pid_file = None


def publish_run_files(listen: str, port: int, detached_log: str | None, grace_ms: int) -> RunFiles:
    """Title this process, fix the detached log's name, write the pid file.

    Best effort: a router whose runtime dir is not writable still serves (systemd units
    have their own pid tracking); it only warns that stop/status will not find it.
    """
    address = f"{listen.rsplit(':', 1)[0]}:{port}"  # the bound port (listen may say :0)
    set_router_title(address)
    final_log = _settle_log(Path(detached_log), port) if detached_log else None
    start = process_start(os.getpid())
    assert start is not None  # this very process
    record = PidRecord(os.getpid(), address, start, None if final_log is None else str(final_log),
                       grace_ms)  # fmt: skip
    try:
        pid_file: Path | None = write_pid_file(record, port)
    except OSError as exc:
        log.warning("no pid file (shellgate stop/status will not find this router): %s", exc)
        pid_file = None
    return RunFiles(port, pid_file, final_log)


def _settle_log(temporary: Path, port: int) -> Path:
    """Rename the log this process already writes (its stderr) to `router-PORT.log`."""
    final = log_path(port)
    if final.exists():
        with contextlib.suppress(OSError):
            os.replace(final, final.with_name(final.name + ".1"))
    try:
        # Same folder, so a rename: the open stderr keeps writing into it.
        os.replace(temporary, final)
    except OSError as exc:
        log.warning("detached log stays at %s: %s", temporary, exc)
        return temporary
    return final
