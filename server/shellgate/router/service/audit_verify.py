"""`shellgate audit verify`: the chain, its signatures, where it may begin and the
checkpoints it must reach (docs/operations.md).

What each check catches: a changed byte (the line's hash), a removed or moved line (the
next `prev`, `seq`), a rewritten and re-hashed chain (signatures, with the public key), a
head cut off (a chain may begin only at seq 0 or where its writer's start and rotate
records say the oldest kept file begins), a tail cut off (a checkpoint, or `--min-seq`,
names a later seq), and a log deleted and started over (a checkpoint names another chain;
the new start record carries the checkpoint it found, when the checkpoint file was kept).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shellgate.router.service.audit_files import parse_checkpoint_line
from shellgate.router.service.audit_format import GENESIS, AuditKey, split_line

__all__ = ["Checkpoint", "VerifyResult", "read_checkpoints", "verify_files"]

# Hashes remembered to compare a start record's checkpoint with (it is usually within the
# last `audit_checkpoint_records` records before the restart).
_RECENT = 100_000


@dataclass(frozen=True)
class Checkpoint:
    """A head the chain must hold: seq `seq` with hash `digest`, in chain `chain`."""

    source: str
    chain: str | None
    seq: int
    digest: str


def read_checkpoints(path: str, keys: Sequence[AuditKey]) -> list[Checkpoint]:
    """Every checkpoint in `path` (a checkpoint file, or log lines that carry them).

    ValueError (one line) for a file without one, or a checkpoint the keys did not sign.
    """
    found = []
    for number, line in enumerate(Path(path).read_text(errors="replace").splitlines(), 1):
        checkpoint = parse_checkpoint_line(line)
        if checkpoint is None:
            continue
        where = f"{path}:{number}"
        if keys and not any(k.checkpoint_ok(checkpoint) for k in keys):
            raise ValueError(f"{where}: forged checkpoint: its signature does not verify")
        found.append(_checkpoint(checkpoint, where))
    if not found:
        raise ValueError(f"{path}: no checkpoint in it")
    return found


def _checkpoint(value: dict[str, Any], where: str) -> Checkpoint:
    seq, digest, chain = value.get("seq"), value.get("hash"), value.get("chain")
    if type(seq) is not int or not isinstance(digest, str):
        raise ValueError(f"{where}: not a checkpoint (seq and hash)")
    return Checkpoint(where, chain if isinstance(chain, str) else None, seq, digest)


@dataclass(frozen=True)
class VerifyResult:
    """The first reason the files are refused (None: whole) and what was checked."""

    lines: int
    broken_at: tuple[str, int, str] | None
    partial_tail: tuple[str, int] | None
    first_seq: int | None = None
    last_seq: int | None = None
    chain: str | None = None
    # The key the signatures verified with (None: not checked, or none signed).
    key_id: str | None = None
    # Records before the first signed one (a log written before audit_key_file was set).
    unsigned_before: int = 0
    # Where the chain is anchored: "genesis" or "seq K" (a start/rotate record's kept_from).
    anchor: str = ""


class _Walk:
    """The state of one pass over the lines, oldest first."""

    def __init__(self, keys: Sequence[AuditKey], checkpoints: Sequence[Checkpoint]) -> None:
        self.keys = keys
        self.given: dict[int, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            self.given.setdefault(checkpoint.seq, []).append(checkpoint)
        self.count = 0
        self.prev: str | None = None
        self.seq: int | None = None
        self.first: tuple[str, int, int, bool] | None = None  # path, line, seq, genesis
        self.last: tuple[str, int] = ("", 0)
        self.chain: str | None = None
        self.starts: set[int] = set()  # every file start a start/rotate record named
        self.kept_from: int | None = None  # the last one's oldest kept
        self.key_id: str | None = None
        self.unsigned = 0
        self.recent: OrderedDict[int, str] = OrderedDict()

    def line(self, path: str, number: int, line: bytes) -> str | None:
        """Check one complete line; the reason it breaks the chain, or None."""
        parts = split_line(line)
        try:
            record = json.loads(line)
            seq, prev = record["seq"], record["prev"]
        except (ValueError, KeyError, TypeError):
            return "not an audit record"
        if parts is None or type(seq) is not int or record.get("hash") != parts.digest:
            return "not an audit record"
        if record.get("sig") != parts.sig:
            return "not an audit record"
        if not parts.intact():
            return "the line's hash does not match it"
        if self.prev is not None and prev != self.prev:
            return "prev does not match the line before"
        if self.seq is not None and seq != self.seq:
            return f"seq {seq}, expected {self.seq}"
        if self.first is None:
            self.first = (path, number, seq, seq == 0 and prev == GENESIS)
        why = self._signature(parts.digest, parts.sig)
        if why is None and record.get("type") in ("start", "rotate"):
            why = self._boundary(record, seq, prev)
        if why is None:
            why = self._given(seq, parts.digest)
        self.prev, self.seq, self.last = parts.digest, seq + 1, (path, number)
        self.recent[seq] = parts.digest
        if len(self.recent) > _RECENT:
            self.recent.popitem(last=False)
        self.count += 1
        return why

    def _signature(self, digest: str, sig: str | None) -> str | None:
        if not self.keys:
            return None
        if sig is None:
            if self.key_id is not None:
                return "forged: an unsigned record after signed ones (signatures stripped?)"
            self.unsigned += 1
            return None
        key = next((k for k in self.keys if k.record_ok(digest, sig)), None)
        if key is None:
            return (
                "forged: the signature does not verify with the key given "
                "(rewritten and re-hashed, or signed by another key)"
            )
        self.key_id = key.key_id
        return None

    def _boundary(self, record: dict[str, Any], seq: int, prev: str) -> str | None:
        """A start or rotate record: the chain's id, its file starts, the head it names."""
        chain, files = record.get("chain"), record.get("files")
        if self.chain is not None and chain != self.chain:
            return f"started over: chain {chain} follows chain {self.chain} (another log's records)"
        self.chain = chain if isinstance(chain, str) else self.chain
        if isinstance(files, list) and files and all(type(f) is int for f in files):
            self.starts.update(files)
            self.kept_from = files[0]
        if record.get("type") != "start":
            return None
        head = record.get("head")
        if head is None and not (seq == 0 and prev == GENESIS):
            return "started over: a start record naming no previous head inside the chain"
        if isinstance(head, dict) and (head.get("seq") != seq - 1 or head.get("hash") != prev):
            return "the start record's head is not the line before it"
        found = record.get("checkpoint")
        if isinstance(found, dict):
            return self._at_restart(_checkpoint(found, f"the start record's (seq {seq})"), seq)
        return None

    def _at_restart(self, checkpoint: Checkpoint, seq: int) -> str | None:
        """A start record names the checkpoint it found: the chain must hold it already."""
        if checkpoint.chain is not None and checkpoint.chain != self.chain:
            return (
                f"started over: the router found a checkpoint of chain {checkpoint.chain} "
                f"(seq {checkpoint.seq}) and no log continuing it (deleted, then restarted?)"
            )
        if checkpoint.seq >= seq:
            return (
                f"tail truncated before this restart: its checkpoint says seq "
                f"{checkpoint.seq} existed, the log had reached seq {seq - 1}"
            )
        known = self.recent.get(checkpoint.seq)
        if known is not None and known != checkpoint.digest:
            return f"rewritten: seq {checkpoint.seq} is not the one the restart's checkpoint names"
        return None

    def _elsewhere(self, checkpoint: Checkpoint) -> bool:
        """Whether a checkpoint names another chain than this log's."""
        return (
            checkpoint.chain is not None
            and self.chain is not None
            and checkpoint.chain != self.chain
        )

    def _given(self, seq: int, digest: str) -> str | None:
        for checkpoint in self.given.pop(seq, ()):
            if self._elsewhere(checkpoint):
                return _other_chain(checkpoint, self.chain)
            if checkpoint.digest != digest:
                return f"rewritten: seq {seq} is not the one checkpoint {checkpoint.source} names"
        return None

    def ending(self, min_seq: int | None) -> str | None:
        """What the whole chain must satisfy once read: signed, anchored, long enough."""
        assert self.first is not None
        _, _, first_seq, genesis = self.first
        last_seq = (self.seq or 0) - 1
        if self.keys and self.key_id is None:
            return "not signed: no record carries a signature (written without audit_key_file?)"
        if not genesis and (first_seq not in self.starts or self.kept_from is None):
            return (
                f"head truncated: the chain begins at seq {first_seq}, neither at seq 0 nor "
                "where a file its writer kept begins: records before it were removed"
            )
        if not genesis and self.kept_from is not None and first_seq > self.kept_from:
            return (
                f"head truncated: the chain begins at seq {first_seq}, its last start or rotate "
                f"record says the files kept begin at seq {self.kept_from}: give the older files "
                "(or records that would say otherwise were cut off its end)"
            )
        for checkpoints in self.given.values():
            for checkpoint in checkpoints:
                if self._elsewhere(checkpoint):
                    return _other_chain(checkpoint, self.chain)
                if checkpoint.seq > last_seq:
                    return (
                        f"tail truncated: the log ends at seq {last_seq}, checkpoint "
                        f"{checkpoint.source} says seq {checkpoint.seq} existed"
                    )
        if min_seq is not None and last_seq < min_seq:
            return f"tail truncated: the log ends at seq {last_seq}, below --min-seq {min_seq}"
        return None


def _other_chain(checkpoint: Checkpoint, chain: str | None) -> str:
    return (
        f"started over: checkpoint {checkpoint.source} is of chain {checkpoint.chain} (seq "
        f"{checkpoint.seq}), this log is chain {chain} (deleted, then restarted?)"
    )


def _lines(path: str) -> Iterator[tuple[int, bytes, bool]]:
    parts = Path(path).read_bytes().split(b"\n")
    for number, part in enumerate(parts, 1):
        last = number == len(parts)
        if last and part == b"":
            return
        yield number, part, not last


def verify_files(
    paths: Iterable[str],
    *,
    keys: Sequence[AuditKey] = (),
    checkpoints: Sequence[Checkpoint] = (),
    min_seq: int | None = None,
) -> VerifyResult:
    """Check the chain across `paths` (oldest first). Without `keys` signatures are not
    checked (the chain then proves nothing against whoever can rewrite the files)."""
    walk = _Walk(keys, checkpoints)
    files = list(paths)
    partial: tuple[str, int] | None = None

    def result(broken: tuple[str, int, str] | None) -> VerifyResult:
        first = walk.first
        anchor = "" if first is None else "genesis" if first[3] else f"seq {first[2]}"
        return VerifyResult(
            walk.count, broken, partial, first[2] if first else None,
            (walk.seq - 1) if walk.seq is not None else None, walk.chain, walk.key_id,
            walk.unsigned, anchor,
        )  # fmt: skip

    for index, path in enumerate(files):
        for number, line, complete in _lines(path):
            if not complete:
                if index == len(files) - 1:
                    partial = (path, number)
                    break
                return result((path, number, "partial line inside the chain"))
            why = walk.line(path, number, line)
            if why is not None:
                return result((path, number, why))
    if walk.first is None:
        return result((files[0] if files else "", 0, "no records"))
    why = walk.ending(min_seq)
    if why is not None:
        where = walk.first if why.startswith(("head", "not signed")) else walk.last
        return result((where[0], where[1], why))
    return result(None)
