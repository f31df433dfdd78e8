"""The audit log's files: the rotated set, its head and oldest line, the writer's lock and
the checkpoint file.

The lock is `flock` on .NAME.lock beside PATH (never renamed, unlike PATH; hidden, so a
glob of `audit.log.*` still names only the rotated files), held from start to close:
one file, one writer. Two routers appending to one chain would each chain onto its own
idea of the head and break it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "AuditLogBusy",
    "AuditLogError",
    "Head",
    "WriterLock",
    "file_starts",
    "find_head",
    "first_line",
    "parse_checkpoint_line",
    "read_last_checkpoint",
    "rotated",
    "tail",
    "write_checkpoint_file",
]

# Lines are read backwards in blocks this big (a record is usually a few hundred bytes).
_BLOCK = 64 * 1024


class AuditLogError(RuntimeError):
    """The audit log cannot be opened as it is; the message is one line for the operator."""


class AuditLogBusy(AuditLogError):
    """Another process holds the audit log's writer lock."""


def rotated(path: Path, n: int) -> Path:
    """PATH.n (PATH itself for 0)."""
    return path if n == 0 else path.with_name(f"{path.name}.{n}")


def tail(path: Path) -> tuple[bytes | None, int]:
    """The last complete line of `path` (None: none) and the offset just after it."""
    try:
        file = path.open("rb")
    except FileNotFoundError:
        return None, 0
    with file:
        size = file.seek(0, os.SEEK_END)
        data, start = b"", size
        while start > 0:
            start = max(0, start - _BLOCK)
            file.seek(start)
            data = file.read(_BLOCK) + data
            end = data.rfind(b"\n")
            if end >= 0 and (data.rfind(b"\n", 0, end) >= 0 or start == 0):
                line_start = data.rfind(b"\n", 0, end) + 1
                return data[line_start:end], start + end + 1
        return None, 0


def first_line(path: Path) -> bytes | None:
    """The first complete line of `path` (None: none)."""
    try:
        file = path.open("rb")
    except FileNotFoundError:
        return None
    with file:
        data = b""
        while block := file.read(_BLOCK):
            data += block
            end = data.find(b"\n")
            if end >= 0:
                return data[:end]
    return None


def _record(line: bytes | None, path: Path) -> dict[str, Any] | None:
    if line is None:
        return None
    try:
        record = json.loads(line)
        int(record["seq"])
    except (ValueError, KeyError, TypeError) as exc:
        raise AuditLogError(
            f"audit log {path}: a line is not an audit record; check it with "
            f"`shellgate audit verify` and move the files aside to start a new chain"
        ) from exc
    return record  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Head:
    """The last record of the chain on disk (seq and hash) and the first line of its file."""

    seq: int
    digest: str
    first: bytes | None


def find_head(path: Path, keep: int, digest_of: Callable[[bytes], str]) -> Head | None:
    """The newest complete line among PATH, PATH.1 … PATH.keep (None: no chain on disk).

    `digest_of(line)` is the hash a line carries. The first line of that file is where the
    chain's id and its file boundaries are (every file begins with a `start` or `rotate`).
    """
    for n in range(max(keep, 1) + 1):
        file = rotated(path, n)
        last, _ = tail(file)
        record = _record(last, file)
        if record is None or last is None:
            continue
        return Head(int(record["seq"]), digest_of(last), first_line(file))
    return None


def file_starts(path: Path, keep: int) -> list[int]:
    """The seq of the first line of each file kept, oldest first (PATH.keep … PATH)."""
    starts = []
    for n in range(max(keep, 1), -1, -1):
        file = rotated(path, n)
        record = _record(first_line(file), file)
        if record is not None:
            starts.append(int(record["seq"]))
    return starts


class WriterLock:
    """An exclusive `flock` on .NAME.lock holding the writer's pid; AuditLogBusy if taken."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(f".{path.name}.lock")
        # O_CLOEXEC: a command the router spawns must not inherit (and so keep) the lock.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise AuditLogError(f"audit log {path}: cannot lock {self.path}: {exc}") from exc
            who = f"pid {holder}" if holder.isdigit() else "pid unknown"
            raise AuditLogBusy(
                f"audit log {path} is in use by another router ({who}; lock {self.path}): "
                "one audit file has one writer"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases it)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def write_checkpoint_file(path: str, checkpoint: dict[str, Any]) -> None:
    """Replace `path` with the checkpoint, atomically (a reader sees the old or the new)."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    line = json.dumps(checkpoint, separators=(",", ":")).encode() + b"\n"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, target)


def read_last_checkpoint(path: str) -> dict[str, Any] | None:
    """The last checkpoint in `path` (None: no file, or no checkpoint line in it)."""
    with contextlib.suppress(FileNotFoundError):
        for line in reversed(Path(path).read_text(errors="replace").splitlines()):
            found = parse_checkpoint_line(line)
            if found is not None:
                return found
    return None


def parse_checkpoint_line(line: str) -> dict[str, Any] | None:
    """A checkpoint from a line: the JSON object from its first `{` (the tail of a text log
    line too), or the `message` of a JSON log line that holds one."""
    start = line.find("{")
    if start < 0:
        return None
    try:
        value = json.loads(line[start:])
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if value.get("type") == "checkpoint":
        return value
    message = value.get("message")
    return parse_checkpoint_line(message) if isinstance(message, str) and message != line else None
