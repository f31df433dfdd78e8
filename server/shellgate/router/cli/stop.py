"""`shellgate stop`: end the router that published its pid file for the port.

SIGTERM first — the router drains (in-flight calls finish or are ended with a paired
`completed`, its processes are killed, the token and pid files removed) — then, only when it
is still alive after its shutdown grace plus a margin (or `--timeout`), SIGKILL. The process
is held by a pidfd once its pid file checks out (`pidfile.py`), so the signals reach that
process and no other even if the pid is reused meanwhile.

Exit codes: 0 stopped (or there was nothing to stop), 1 refused or still alive.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys

from shellgate.common.local_token import token_path
from shellgate.router.cli.pidfile import (
    NotRunning,
    PidRecord,
    Running,
    Untrusted,
    find_router,
    not_this_router,
    remove_pid_file,
)
from shellgate.router.cli.status import add_target, target_port

# Beyond the router's own shutdown grace: its listeners close and the process exits.
_MARGIN_S = 10.0
# After SIGKILL the kernel needs no grace; this only bounds an unkillable (D state) process.
_KILL_WAIT_S = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate stop`."""
    add_target(parser)
    parser.add_argument(
        "--timeout", type=float, metavar="S",
        help=f"seconds to wait after SIGTERM before SIGKILL (default: the router's "
        f"shutdown_grace_ms + {_MARGIN_S:.0f} s)",
    )  # fmt: skip


def _exited(pidfd: int, timeout_s: float) -> bool:
    """Wait until the process behind `pidfd` exits (readable), at most `timeout_s`."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000))))


def _stop(record: PidRecord, port: int, timeout_s: float) -> int:
    try:
        pidfd = os.pidfd_open(record.pid)
    except ProcessLookupError:
        print(f"shellgate stop: router pid {record.pid} had already exited")
        return 0
    try:
        # Checked again through the pidfd: it names this one process from now on.
        why = not_this_router(record)
        if why is not None:
            print(f"shellgate stop: not signalling: {why}", file=sys.stderr)
            return 1
        name = f"router on {record.listen} (pid {record.pid})"
        signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        if _exited(pidfd, timeout_s):
            print(f"shellgate stop: {name} stopped")
            return 0
        print(f"shellgate stop: {name} still running {timeout_s:g} s after SIGTERM: sending "
              "SIGKILL (its drain did not finish)", file=sys.stderr)  # fmt: skip
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        if not _exited(pidfd, _KILL_WAIT_S):
            print(f"shellgate stop: {name} survived SIGKILL for {_KILL_WAIT_S:g} s",
                  file=sys.stderr)  # fmt: skip
            return 1
        # Killed, it could not remove its own files.
        remove_pid_file(port, record.pid)
        token_path("router", port).unlink(missing_ok=True)
        print(f"shellgate stop: {name} killed (SIGKILL)")
        return 0
    finally:
        os.close(pidfd)


def run(args: argparse.Namespace) -> int:
    """Stop the router for --target's port; see the module doc for the exit codes."""
    port = target_port(args.target)
    if port is None:
        print(f"shellgate stop: --target must be host:port (got {args.target!r})", file=sys.stderr)
        return 2
    found = find_router(port)
    match found:
        case NotRunning(reason):
            print(f"shellgate stop: no router running for {args.target} ({reason})")
            return 0
        case Untrusted(reason):
            print(f"shellgate stop: not signalling anything: {reason}", file=sys.stderr)
            return 1
        case Running(record):
            timeout_s = args.timeout if args.timeout is not None else (
                record.grace_ms / 1000 + _MARGIN_S
            )  # fmt: skip
            return _stop(record, port, timeout_s)
    return 1
