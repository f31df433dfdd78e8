"""The audit log file: signed, hash-chained JSON lines written off the event loop by one
writer thread (docs/operations.md).

The line format and its Ed25519 signatures (and why Ed25519, not an HMAC) are in
audit_format.py; `verify` is audit_verify.py. Each line carries `seq`, `prev` (the previous
line's hash; 64 zeros for the very first line), then `hash` and `sig` last.

**Start.** The writer takes .NAME.lock (`flock`, held until close: a second router on the
file is refused), cuts a partial last line (a crash mid-write; it never had a successor),
finds the head (the last line of PATH, else PATH.1, … PATH.keep) and writes a `start`
record naming it. Only the very first start of a chain names no head, at seq 0; a start
also names the oldest seq still kept (`kept_from`) and the last checkpoint found in
`checkpoint_file`, so a log cut or replaced while the router was down contradicts its next
start record. A line is one `os.write` on an O_APPEND descriptor: never interleaved.

**Rotation.** Past `max_bytes` PATH becomes PATH.1 (PATH.1 PATH.2, …, `keep` kept) and the
new PATH begins with a `rotate` record naming the chain and the oldest seq kept: a chain
that begins after seq 0 is whole only from a seq such a record names.

**Checkpoints** (chain, head seq and hash, signed) every `checkpoint_records` records or
`checkpoint_interval_ms` after a record, and at close, each after an fsync: to
`checkpoint_file` (replaced atomically), to the log (INFO `audit checkpoint {…}`) and to
the metrics gauges. Shipped off the host they tell a log cut at its end, or deleted and
started over, from an intact one.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

from shellgate.router.service.audit_config import AuditSettings
from shellgate.router.service.audit_files import (
    AuditLogBusy,
    AuditLogError,
    WriterLock,
    file_starts,
    find_head,
    read_last_checkpoint,
    rotated,
    tail,
    write_checkpoint_file,
)
from shellgate.router.service.audit_format import (
    GENESIS,
    AuditSigner,
    line_digest,
    load_signing_key,
    seal,
    sign_checkpoint,
    split_line,
)
from shellgate.router.service.audit_verify import VerifyResult, verify_files

__all__ = [
    "GENESIS",
    "AuditLog",
    "AuditLogBusy",
    "AuditLogError",
    "FsyncPolicy",
    "VerifyResult",
    "line_digest",
    "open_audit_log",
    "verify_files",
]

log = logging.getLogger("shellgate.audit")

FsyncPolicy = Literal["always", "batch", "never"]
_STOP = object()
# The writer's own fields: a record handed in cannot set them.
_RESERVED = frozenset({"seq", "time", "prev", "hash", "sig"})


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(at: datetime.datetime) -> str:
    return at.isoformat(timespec="milliseconds")


class AuditLog:
    """Appends records to the chain from a writer thread (`record` never blocks on disk)."""

    def __init__(
        self,
        path: str,
        *,
        fsync: FsyncPolicy = "batch",
        max_bytes: int = 100 * 1024 * 1024,
        keep: int = 10,
        command_text: bool = True,
        redact: Callable[[str], str] | None = None,
        signer: AuditSigner | None = None,
        checkpoint_file: str = "",
        checkpoint_records: int = 1000,
        checkpoint_interval_ms: int = 60_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.fsync, self.max_bytes, self.keep = fsync, max_bytes, keep
        self.command_text, self.redact, self.signer = command_text, redact, signer
        self.checkpoint_file = checkpoint_file
        self.checkpoint_records = checkpoint_records
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.clock = clock
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._fd, self._size = -1, 0
        self._prev, self._seq = GENESIS, 0
        self.chain = ""
        # The seq each kept file begins at, oldest first (start and rotate records say it).
        self._files: list[int] = []
        # Records since the last checkpoint, and when it was taken (clock seconds).
        self._since, self._checkpoint_at = 0, clock()
        self.checkpoint_seq = -1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = WriterLock(self.path)
        try:
            self._open()
            self._start()
        except BaseException:
            self._close_files()
            raise
        self._thread = threading.Thread(target=self._write_loop, name="audit-log", daemon=True)
        self._thread.start()

    @property
    def head_seq(self) -> int:
        """The seq of the last record written (read by the metrics scrape)."""
        return self._seq - 1

    def gauges(self) -> list[tuple[str, str, Callable[[], float]]]:
        """(name, help, read) of the metrics gauges that ship the head and checkpoint seq."""
        return [
            ("shellgate_audit_head_seq", "Seq of the last audit record written.",
             lambda: self.head_seq),
            ("shellgate_audit_checkpoint_seq", "Seq of the last audit checkpoint.",
             lambda: self.checkpoint_seq),
        ]  # fmt: skip

    def _open(self) -> None:
        _, end = tail(self.path)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._fd = fd
        size = os.fstat(fd).st_size
        if size > end:
            # A crash mid-write left a partial last line: it has no successor, drop it.
            log.warning("audit log %s: cut a partial last line of %d bytes", self.path, size - end)
            os.ftruncate(fd, end)
            size = end
        self._size = size
        self.head = find_head(self.path, self.keep, line_digest)
        if self.head is not None:
            self._prev, self._seq = self.head.digest, self.head.seq + 1

    def _start(self) -> None:
        """Write the `start` record (naming the head found) and a first checkpoint."""
        head = self.head
        chain, files = self._boundary(head.first) if head is not None else (None, None)
        self.chain = chain or secrets.token_hex(16)
        # No file starts we can trust (none on disk, a log from before start records, another
        # key's): the ones on disk.
        self._files = files if files is not None else file_starts(self.path, self.keep)
        if self._size == 0:
            self._files.append(self._seq)  # the start record begins PATH
        self._write(_now(), {
            "type": "start", "chain": self.chain, "head": None,
            "checkpoint": self._last_checkpoint(),
            "key": self.signer.key_id if self.signer is not None else None,
            "pid": os.getpid(), "host": socket.gethostname(),
        }, boundary=True)  # fmt: skip
        self._checkpoint()

    def _boundary(self, line: bytes | None) -> tuple[str | None, list[int] | None]:
        """The chain id a file's first line (a start or rotate record) names, and its file
        starts when the line is ours (signed by our key; any intact line when unsigned)."""
        parts = split_line(line) if line is not None else None
        if parts is None or line is None or not parts.intact():
            return None, None
        record = json.loads(line)
        chain, files = record.get("chain"), record.get("files")
        if record.get("type") not in ("start", "rotate") or not isinstance(chain, str):
            return None, None
        ours = self.signer is None or (
            parts.sig is not None and self.signer.public.record_ok(parts.digest, parts.sig)
        )
        if not ours or not isinstance(files, list) or not files:
            return chain, None
        return chain, files if all(type(f) is int for f in files) else None

    def _last_checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint file's last checkpoint when it is ours (signed by our key)."""
        if not self.checkpoint_file:
            return None
        try:
            found = read_last_checkpoint(self.checkpoint_file)
        except OSError as exc:
            log.warning("audit checkpoint file %s: cannot read: %s", self.checkpoint_file, exc)
            return None
        if found is None:
            return None
        if self.signer is not None and not self.signer.public.checkpoint_ok(found):
            log.warning("audit checkpoint file %s: not signed by audit_key_file: ignored",
                        self.checkpoint_file)  # fmt: skip
            return None
        head = self.head
        if (
            head is None or found.get("chain") != self.chain
            or not isinstance(found.get("seq"), int) or found["seq"] > head.seq
            or (found["seq"] == head.seq and found.get("hash") != head.digest)
        ):  # fmt: skip
            log.error(
                "audit log %s does not reach its last checkpoint (chain %s, seq %s): it was "
                "cut, replaced or deleted while the router was down; the start record says so",
                self.path, found.get("chain"), found.get("seq"),
            )  # fmt: skip
        return found

    def record(self, entry: dict[str, Any]) -> None:
        """Queue one record; the writer thread stamps, chains, signs and writes it."""
        self._queue.put((_now(), entry))

    def close(self) -> None:
        """Write what is queued and a last checkpoint, stop the writer, release the file."""
        self._queue.put(_STOP)
        self._thread.join(timeout=10)
        self._close_files()

    def _close_files(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._lock.release()

    def _write_loop(self) -> None:
        while True:
            due = self._checkpoint_at + self.checkpoint_interval_ms / 1000 - self.clock()
            try:
                item = self._queue.get(timeout=max(due, 0.001))
            except queue.Empty:
                if self._since:
                    self._safe_checkpoint()
                self._checkpoint_at = self.clock()
                continue
            batch: list[object] = [item]
            # Drain what else is queued: one fsync per burst under the `batch` policy.
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            for queued in batch:
                if queued is _STOP:
                    continue
                try:
                    self._write(*cast(tuple[datetime.datetime, dict[str, Any]], queued))
                except Exception:
                    log.exception("audit log: a record could not be written")
            if self.fsync == "batch" and self._fd >= 0:
                os.fsync(self._fd)
            if self._since >= self.checkpoint_records or (stop and self._since):
                self._safe_checkpoint()
            if stop:
                return

    def _line(
        self, at: datetime.datetime, entry: dict[str, Any], boundary: bool = False
    ) -> tuple[bytes, str]:
        head = {"seq": self._seq, "time": _stamp(at), "prev": self._prev}
        if boundary:
            # Where each file kept begins (oldest first), by this writer's own count: a
            # chain that begins later than seq 0 is whole only from `kept_from` on.
            self._files = self._files[-(max(self.keep, 1) + 1) :]
            entry = {**entry, "kept_from": self._files[0], "files": self._files}
            if entry["type"] == "start":
                # The line before (after a rotation at start: the rotate record, which
                # chains onto the head found on disk); none only at a chain's seq 0.
                entry["head"] = {"seq": self._seq - 1, "hash": self._prev} if self._seq else None
        body = json.dumps({**head, **entry}, ensure_ascii=False, separators=(",", ":"))
        return seal(body.encode(), self.signer)

    def _write(self, at: datetime.datetime, entry: dict[str, Any], boundary: bool = False) -> None:
        entry = {k: v for k, v in self._prepared(entry).items() if k not in _RESERVED}
        line, digest = self._line(at, entry, boundary)
        if self.max_bytes and self._size and self._size + len(line) + 1 > self.max_bytes:
            self._rotate(at)
            line, digest = self._line(at, entry, boundary)
        self._append(line, digest)

    def _append(self, line: bytes, digest: str) -> None:
        # One write of the whole line on O_APPEND: never interleaved, never half of two.
        os.write(self._fd, line + b"\n")
        if self.fsync == "always":
            os.fsync(self._fd)
        self._size += len(line) + 1
        self._prev, self._seq = digest, self._seq + 1
        self._since += 1

    def _prepared(self, entry: dict[str, Any]) -> dict[str, Any]:
        if "command" not in entry:
            return entry
        if not self.command_text:
            # Only the digest identifies the command; heuristics matches echo it, drop that.
            entry = {k: v for k, v in entry.items() if k not in ("command", "segments", "cwd")}
            entry["matched_rules"] = [
                {k: v for k, v in m.items() if k != "command"}
                for m in entry.get("matched_rules", ())
            ]
        if self.redact is None:
            return entry
        return json.loads(self.redact(json.dumps(entry, ensure_ascii=False)))  # type: ignore[no-any-return]

    def _rotate(self, at: datetime.datetime) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
        keep = max(self.keep, 1)
        for n in range(keep - 1, 0, -1):
            older = rotated(self.path, n)
            if older.exists():
                older.rename(rotated(self.path, n + 1))
        self.path.rename(rotated(self.path, 1))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._size = 0
        # The new file says which chain it continues and where what is kept begins now:
        # the next-oldest file's start, as this writer counted them (not as the disk says).
        self._files.append(self._seq)
        self._append(*self._line(at, {"type": "rotate", "chain": self.chain}, boundary=True))

    def _checkpoint(self) -> None:
        # A checkpoint vouches that seq N exists: only once it is on disk.
        os.fsync(self._fd)
        checkpoint = sign_checkpoint({
            "type": "checkpoint", "chain": self.chain, "seq": self._seq - 1,
            "hash": self._prev, "time": _stamp(_now()),
            "key": self.signer.key_id if self.signer is not None else None,
        }, self.signer)  # fmt: skip
        self._since, self._checkpoint_at = 0, self.clock()
        self.checkpoint_seq = checkpoint["seq"]
        log.info("audit checkpoint %s", json.dumps(checkpoint, separators=(",", ":")))
        if self.checkpoint_file:
            write_checkpoint_file(self.checkpoint_file, checkpoint)

    def _safe_checkpoint(self) -> None:
        try:
            self._checkpoint()
        except OSError:
            log.exception("audit log: a checkpoint could not be written")


def open_audit_log(settings: AuditSettings, redact: Callable[[str], str] | None) -> AuditLog | None:
    """The audit log `settings` configure (None: off); ConfigError or AuditLogError if not."""
    if not settings.audit_log:
        return None
    signer = load_signing_key(settings.audit_key_file) if settings.audit_key_file else None
    audit = AuditLog(
        settings.audit_log, fsync=cast(FsyncPolicy, settings.audit_fsync),
        max_bytes=settings.audit_max_bytes, keep=settings.audit_keep,
        command_text=settings.audit_command_text, redact=redact, signer=signer,
        checkpoint_file=settings.audit_checkpoint_file,
        checkpoint_records=settings.audit_checkpoint_records,
        checkpoint_interval_ms=settings.audit_checkpoint_interval_ms,
    )  # fmt: skip
    if signer is None:
        # After the lock: a router refused the file says only that, in one line.
        log.warning(
            "audit log %s is not signed (no audit_key_file): its chain shows damage, but "
            "anyone who can write the file can rewrite it unnoticed", settings.audit_log,
        )  # fmt: skip
    return audit
