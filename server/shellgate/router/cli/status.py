"""`shellgate status`: is a router of this user running for the port, and where is its log.

Exit codes as `systemctl status`: 0 running, 3 not running (a stale pid file is named and
removed), 4 the pid file is not this user's own (nothing read from it).
"""

from __future__ import annotations

import argparse
import sys

from shellgate.router.cli.pidfile import NotRunning, Running, Untrusted, find_router
from shellgate.router.service.config import DEFAULT_LISTEN

EXIT_RUNNING, EXIT_NOT_RUNNING, EXIT_UNKNOWN = 0, 3, 4


def add_target(parser: argparse.ArgumentParser) -> None:
    """The --target option `status` and `stop` share."""
    parser.add_argument(
        "--target", default=DEFAULT_LISTEN, metavar="H:P",
        help=f"the router's address; its port names the pid file (default {DEFAULT_LISTEN})",
    )  # fmt: skip


def target_port(target: str) -> int | None:
    """The port of `host:port`, or None."""
    port = target.rpartition(":")[2]
    return int(port) if port.isdigit() and int(port) <= 65535 else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate status`."""
    add_target(parser)


def describe(found: Running) -> str:
    """One line about a running router: address, pid, log."""
    record = found.record
    log = record.log or "none (not detached: its stderr)"
    return f"running on {record.listen}: pid {record.pid}, log {log}"


def run(args: argparse.Namespace) -> int:
    """Print the router's state; exit 0 running, 3 not running, 4 unknown."""
    port = target_port(args.target)
    if port is None:
        print(
            f"shellgate status: --target must be host:port (got {args.target!r})", file=sys.stderr
        )
        return 2
    found = find_router(port)
    match found:
        case Running():
            print(f"shellgate router {describe(found)}")
            return EXIT_RUNNING
        case NotRunning(reason):
            print(f"shellgate router for {args.target}: not running ({reason})")
            return EXIT_NOT_RUNNING
        case Untrusted(reason):
            print(f"shellgate status: {reason}; not trusted, not read", file=sys.stderr)
            return EXIT_UNKNOWN
