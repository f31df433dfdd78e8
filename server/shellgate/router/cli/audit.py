"""`shellgate audit verify|tail`: check an audit log's hash chain, or print it readably."""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path
from typing import Any

from shellgate.router.service.audit_log import verify_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register `audit verify` and `audit tail`."""
    sub = parser.add_subparsers(dest="audit_command", required=True)
    verify = sub.add_parser(
        "verify", help="check the hash chain; exit 1 at the first broken line",
        epilog="examples:\n  shellgate audit verify /var/log/shellgate/audit.log.1 "
        "/var/log/shellgate/audit.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    verify.add_argument("files", nargs="+", metavar="FILE", help="audit files, oldest first")
    tail = sub.add_parser(
        "tail", help="print the last records readably",
        epilog="examples:\n  shellgate audit tail -n 50 /var/log/shellgate/audit.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    tail.add_argument("file", metavar="FILE", help="the audit log")
    tail.add_argument("-n", "--lines", type=int, default=20, help="records to print (20)")


def readable(record: dict[str, Any]) -> str:
    """One record as one short line: time, kind, call, what was decided or how it ended."""
    head = f"{record.get('time', '?')} #{record.get('seq', '?')} {record.get('type', '?'):8}"
    call = f"{record.get('thread', '')}/{record.get('call_id', '')}[{record.get('element', 0)}]"
    if record.get("type") == "decision":
        approval = record.get("approval") or {}
        who = f" by {approval['who']}" if approval.get("who") else ""
        command = " ".join(record.get("command") or []) or record.get("command_digest", "")[:12]
        reason = f" ({record['reason']})" if record.get("reason") else ""
        what = f"{record.get('decision')} [{approval.get('source')}{who}]{reason}: {command}"
    else:
        what = (
            f"{record.get('termination')} exit={record.get('exit_code')} "
            f"sandbox={record.get('sandbox')} {record.get('duration_ms')}ms"
        )
    return f"{head} {record.get('subject', '')} {call} {what}"


def run(args: argparse.Namespace) -> int:
    """Run the chosen audit command."""
    if args.audit_command == "verify":
        try:
            result = verify_files(args.files)
        except OSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if result.partial_tail is not None:
            path, number = result.partial_tail
            print(f"{path}:{number}: partial last line (an interrupted write), ignored")
        if result.broken_at is not None:
            path, number, why = result.broken_at
            print(f"{path}:{number}: chain broken: {why}")
            return 1
        print(f"ok: {result.lines} records, chain intact")
        return 0
    lines: deque[bytes] = deque(Path(args.file).read_bytes().splitlines(), maxlen=args.lines)
    for line in lines:
        try:
            print(readable(json.loads(line)))
        except ValueError:
            print(f"(not a record: {line[:80]!r})")
    return 0
