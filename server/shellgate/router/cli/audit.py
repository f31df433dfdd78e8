"""`shellgate audit verify|tail`: check an audit log (chain, signatures, anchor,
checkpoints), or print it readably."""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path
from typing import Any

from shellgate.router.service.audit_format import AuditKey, load_public_key
from shellgate.router.service.audit_verify import (
    Checkpoint,
    VerifyResult,
    read_checkpoints,
    verify_files,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register `audit verify` and `audit tail`."""
    sub = parser.add_subparsers(dest="audit_command", required=True)
    verify = sub.add_parser(
        "verify", help="check the chain, its signatures, its start and its checkpoints; exit 1 "
        "naming the first reason to refuse it",
        epilog="examples:\n  shellgate audit verify --key /etc/shellgate/audit.pub "
        "--checkpoint /srv/shipped/audit.checkpoint /var/log/shellgate/audit.log.1 "
        "/var/log/shellgate/audit.log\n  shellgate audit verify --unsigned old-audit.log",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    verify.add_argument("files", nargs="+", metavar="FILE", help="audit files, oldest first")
    keyed = verify.add_mutually_exclusive_group()
    keyed.add_argument(
        "--key", action="append", default=[], metavar="FILE",
        help="the Ed25519 public key (PEM; the signing key works too); repeat for old keys",
    )  # fmt: skip
    keyed.add_argument(
        "--unsigned", action="store_true",
        help="check only the hash chain (no signatures: whoever can write the files can redo it)",
    )  # fmt: skip
    verify.add_argument(
        "--checkpoint", action="append", default=[], metavar="FILE",
        help="checkpoints the chain must reach (audit_checkpoint_file, or log lines); repeatable",
    )  # fmt: skip
    verify.add_argument(
        "--min-seq", type=int, metavar="N",
        help="the chain must reach seq N (e.g. the highest shellgate_audit_head_seq scraped)",
    )  # fmt: skip
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
    kind = record.get("type")
    if kind in ("start", "rotate"):
        previous = record.get("head")
        where = (
            "" if kind == "rotate" else f"continues seq {previous.get('seq')}, "
            if isinstance(previous, dict) else "a new chain, "
        )  # fmt: skip
        return (
            f"{head} {where}chain {record.get('chain')} kept from seq {record.get('kept_from')}"
            f"{' pid ' + str(record['pid']) if 'pid' in record else ''}"
        )
    if kind == "checkpoint":
        return f"{head} vouches for records up to #{record.get('seq')}, chain {record.get('chain')}"
    call = f"{record.get('thread', '')}/{record.get('call_id', '')}[{record.get('element', 0)}]"
    if kind == "approval_pending":
        what = f"waits for an operator ({record.get('kind')}): {record.get('command', '')}"
        return f"{head} {record.get('subject', '')} {call} {what}"
    if kind == "decision":
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


def _inputs(args: argparse.Namespace) -> tuple[list[AuditKey], list[Checkpoint]] | tuple[int, str]:
    """The keys and checkpoints `verify` was given, or (exit code, the one-line error)."""
    if not args.key and not args.unsigned:
        return 2, (
            "error: give --key FILE (the audit public key) to check the signatures, or "
            "--unsigned to check only the hash chain"
        )  # fmt: skip
    try:
        keys = [load_public_key(path) for path in args.key]
        checkpoints = [c for path in args.checkpoint for c in read_checkpoints(path, keys)]
    except OSError as exc:
        return 2, f"error: {exc.filename}: {exc.strerror or exc}"
    except ValueError as exc:
        # A checkpoint the key did not sign is a refusal (1), not a usage mistake (2).
        return (1, f"{exc}") if ": forged" in str(exc) else (2, f"error: {exc}")
    return keys, checkpoints


def _summary(result: VerifyResult, checkpoints: list[Checkpoint]) -> str:
    signed = f"signed by key {result.key_id}" if result.key_id else "UNSIGNED (not authenticated)"
    reached = f", reaches {len(checkpoints)} checkpoint(s)" if checkpoints else ""
    return (
        f"ok: {result.lines} records (seq {result.first_seq}-{result.last_seq}), chain intact, "
        f"{signed}, anchored at {result.anchor}{reached}"
    )


def verify(args: argparse.Namespace) -> int:
    """`audit verify`: 0 when the files are whole, 1 naming why not, 2 on bad inputs."""
    inputs = _inputs(args)
    if isinstance(inputs[0], int):
        code, message = inputs
        print(message, file=sys.stderr if code == 2 else sys.stdout)
        return int(code)
    keys, checkpoints = inputs
    try:
        result = verify_files(args.files, keys=keys, checkpoints=checkpoints, min_seq=args.min_seq)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if result.partial_tail is not None:
        path, number = result.partial_tail
        print(f"{path}:{number}: partial last line (an interrupted write), ignored")
    if result.broken_at is not None:
        path, number, why = result.broken_at
        print(f"{path}:{number}: refused: {why}")
        return 1
    if result.unsigned_before:
        print(
            f"note: the first {result.unsigned_before} records are unsigned (written before "
            "audit_key_file); the signed records after them vouch for them from then on"
        )
    print(_summary(result, checkpoints))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the chosen audit command."""
    if args.audit_command == "verify":
        return verify(args)
    lines: deque[bytes] = deque(Path(args.file).read_bytes().splitlines(), maxlen=args.lines)
    for line in lines:
        try:
            print(readable(json.loads(line)))
        except ValueError:
            print(f"(not a record: {line[:80]!r})")
    return 0
