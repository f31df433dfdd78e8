"""The hash-chained audit log file: one JSON line per record, written off the event loop.

Each line carries `seq`, `prev` (the previous line's `hash`; 64 zeros for the very first
line) and, last, `hash`: the SHA-256 (hex) of the line's bytes without the `hash` field.
Changing a byte breaks that line's own hash; removing a line breaks the next line's
`prev` (removing the last line is not detectable from the file alone). A line is written with one `os.write` on an
O_APPEND descriptor, so a crash leaves at most a partial *last* line: `verify` reports it
as such and start-up cuts it off (it never had a successor) before appending. When the
file passes `max_bytes` it is renamed to PATH.1 (PATH.1 to PATH.2, …, `keep` files kept)
and the chain goes on in the new PATH.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["GENESIS", "AuditLog", "FsyncPolicy", "VerifyResult", "line_digest", "verify_files"]

log = logging.getLogger("shellgate.audit")

GENESIS = "0" * 64
FsyncPolicy = Literal["always", "batch", "never"]
_STOP = object()


# `,"hash":"<64 hex>"}` closes every line.
_HASH_TAIL = len(b',"hash":"') + 64 + len(b'"}')


def line_digest(line: bytes) -> str:
    """The hash a line must carry: SHA-256 of its bytes without the trailing hash field."""
    body = line.rstrip(b"\n")
    return hashlib.sha256(body[:-_HASH_TAIL] + b"}").hexdigest()


def _sealed(body: bytes) -> bytes:
    """`body` (a JSON object) with its hash appended as the last field."""
    digest = hashlib.sha256(body).hexdigest()
    return body[:-1] + b',"hash":"' + digest.encode() + b'"}'


def _last_line(path: Path) -> tuple[bytes | None, int]:
    """The last complete line of `path` and the length of the file up to its end."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, 0
    end = data.rfind(b"\n") + 1
    if end == 0:
        return None, 0
    start = data.rfind(b"\n", 0, end - 1) + 1
    return data[start : end - 1], end


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
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.max_bytes = max_bytes
        self.keep = keep
        self.command_text = command_text
        self.redact = redact
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._fd = -1
        self._size = 0
        self._prev, self._seq = GENESIS, 0
        self._open()
        self._thread = threading.Thread(target=self._write_loop, name="audit-log", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        last, end = _last_line(self.path)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        size = os.fstat(fd).st_size
        if size > end:
            # A crash mid-write left a partial last line: it has no successor, drop it.
            log.warning("audit log %s: cut a partial last line of %d bytes", self.path, size - end)
            os.ftruncate(fd, end)
            size = end
        if last is None:
            last = self._last_of_rotated()
        if last is not None:
            self._prev = line_digest(last)
            self._seq = int(json.loads(last).get("seq", 0)) + 1
        self._fd, self._size = fd, size

    def _last_of_rotated(self) -> bytes | None:
        last, _ = _last_line(self.path.with_name(self.path.name + ".1"))
        return last

    def record(self, entry: dict[str, Any]) -> None:
        """Queue one record; the writer thread stamps, chains and writes it."""
        self._queue.put((datetime.datetime.now(datetime.UTC), entry))

    def close(self) -> None:
        """Write what is queued, then stop the writer and close the file."""
        self._queue.put(_STOP)
        self._thread.join(timeout=10)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            stop = False
            batch: list[object] = [item]
            # Drain what else is queued: one fsync per burst under the `batch` policy.
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for queued in batch:
                if queued is _STOP:
                    stop = True
                    continue
                try:
                    self._write(*queued)  # type: ignore[misc]
                except Exception:
                    log.exception("audit log: a record could not be written")
            if self.fsync == "batch" and self._fd >= 0:
                os.fsync(self._fd)
            if stop:
                return

    def _write(self, at: datetime.datetime, entry: dict[str, Any]) -> None:
        entry = self._prepared(entry)
        head = {"seq": self._seq, "time": at.isoformat(timespec="milliseconds"), "prev": self._prev}
        body = json.dumps({**head, **entry}, ensure_ascii=False, separators=(",", ":"))
        line = _sealed(body.encode())
        if self.max_bytes and self._size and self._size + len(line) + 1 > self.max_bytes:
            self._rotate()
        # One write of the whole line on O_APPEND: never interleaved, never half of two.
        os.write(self._fd, line + b"\n")
        if self.fsync == "always":
            os.fsync(self._fd)
        self._size += len(line) + 1
        self._prev, self._seq = line_digest(line), self._seq + 1

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

    def _rotate(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
        for n in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                older.rename(self.path.with_name(f"{self.path.name}.{n + 1}"))
        self.path.rename(self.path.with_name(self.path.name + ".1"))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = 0


@dataclass(frozen=True)
class VerifyResult:
    """The first break of the chain (None: intact) and what was checked."""

    lines: int
    broken_at: tuple[str, int, str] | None
    partial_tail: tuple[str, int] | None


def _lines(path: str) -> Iterator[tuple[int, bytes, bool]]:
    data = Path(path).read_bytes()
    parts = data.split(b"\n")
    for number, part in enumerate(parts, 1):
        last = number == len(parts)
        if last and part == b"":
            return
        yield number, part, not last


def verify_files(paths: Iterable[str]) -> VerifyResult:
    """Check the chain across `paths` (oldest first); the first line's `prev` is trusted."""
    prev: str | None = None
    seq: int | None = None
    count = 0
    files = list(paths)
    for index, path in enumerate(files):
        for number, line, complete in _lines(path):
            if not complete:
                if index == len(files) - 1:
                    return VerifyResult(count, None, (path, number))
                return VerifyResult(count, (path, number, "partial line inside the chain"), None)
            count += 1
            try:
                record = json.loads(line)
                got_prev, got_seq, got_hash = record["prev"], record["seq"], record["hash"]
            except (ValueError, KeyError, TypeError):
                return VerifyResult(count, (path, number, "not an audit record"), None)
            if got_hash != line_digest(line):
                return VerifyResult(
                    count, (path, number, "the line's hash does not match it"), None
                )
            if prev is not None and got_prev != prev:
                return VerifyResult(
                    count, (path, number, "prev does not match the line before"), None
                )
            if seq is not None and got_seq != seq:
                return VerifyResult(count, (path, number, f"seq {got_seq}, expected {seq}"), None)
            prev, seq = got_hash, got_seq + 1
    return VerifyResult(count, None, None)
