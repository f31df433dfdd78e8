"""Per-process sequenced output: seq from 1, bounded retention, the Read selection rule."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.common.process.base import ExitStatus, Stream

DEFAULT_RETAINED_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SeqChunk:
    """One retained output chunk with its sequence number."""

    seq: int
    stream: Stream
    data: bytes
    # Total output bytes of the process through this chunk (paces live followers).
    end: int = 0


@dataclass(frozen=True)
class ReadResult:
    """What `select` returns: chunks in order and the seq to continue after."""

    chunks: tuple[SeqChunk, ...]
    next_seq: int


def select_chunks(
    retained: Sequence[tuple[int, int]],
    process_next_seq: int,
    after_seq: int,
    max_bytes: int | None,
) -> tuple[list[int], int]:
    """The spec's Read selection over (seq, size) pairs → (selected seqs, next_seq)."""
    selected: list[int] = []
    total = 0
    for seq, size in retained:
        if seq <= after_seq:
            continue
        # Stop once the total reached the limit, or before a chunk that would pass it; the
        # first chunk is always included so a huge chunk cannot stall a reader.
        if max_bytes is not None and selected and total + size > max_bytes:
            break
        selected.append(seq)
        total += size
    next_seq = selected[-1] + 1 if selected else process_next_seq
    return selected, next_seq


class Retention:
    """Sequenced events of one process: output chunks, then exited, then closed."""

    def __init__(self, max_bytes: int = DEFAULT_RETAINED_BYTES) -> None:
        self._max_bytes = max_bytes
        self._chunks: deque[SeqChunk] = deque()
        self._bytes = 0
        self._added = 0
        self._next_seq = 1
        self.exit_status: ExitStatus | None = None
        self.exited_seq: int | None = None
        self.closed_seq: int | None = None

    @property
    def next_seq(self) -> int:
        """The seq the next event will take."""
        return self._next_seq

    @property
    def max_bytes(self) -> int:
        """The retention bound."""
        return self._max_bytes

    @property
    def added_bytes(self) -> int:
        """Output bytes ever added (retained or evicted)."""
        return self._added

    @property
    def retained_bytes(self) -> int:
        """Bytes currently held (never above the bound, except one oversized chunk)."""
        return self._bytes

    @property
    def first_retained_seq(self) -> int | None:
        """Seq of the oldest chunk still held."""
        return self._chunks[0].seq if self._chunks else None

    def add_output(self, stream: Stream, data: bytes) -> SeqChunk:
        """Append a chunk (takes the next seq), evicting the oldest whole chunks past the bound."""
        self._added += len(data)
        chunk = SeqChunk(self._next_seq, stream, data, self._added)
        self._next_seq += 1
        self._chunks.append(chunk)
        self._bytes += len(data)
        # Evict oldest whole chunks; the newest is kept even when it alone is over the bound.
        while self._bytes > self._max_bytes and len(self._chunks) > 1:
            self._bytes -= len(self._chunks.popleft().data)
        return chunk

    def mark_exited(self, status: ExitStatus) -> int:
        """Record the exit (takes the next seq)."""
        if self.exited_seq is None:
            self.exit_status = status
            self.exited_seq = self._next_seq
            self._next_seq += 1
        return self.exited_seq

    def mark_closed(self) -> int:
        """Record closed (both streams at EOF and the exit known; takes the next seq)."""
        if self.exited_seq is None:
            raise RuntimeError("closed before exited")
        if self.closed_seq is None:
            self.closed_seq = self._next_seq
            self._next_seq += 1
        return self.closed_seq

    def read(self, after_seq: int, max_bytes: int | None) -> ReadResult:
        """Select retained chunks after `after_seq` under `max_bytes` (the spec's rule)."""
        candidates = self.chunks_after(after_seq)
        seqs, next_seq = select_chunks(
            [(c.seq, len(c.data)) for c in candidates], self._next_seq, after_seq, max_bytes
        )
        # select_chunks takes a prefix of the candidates.
        return ReadResult(tuple(candidates[: len(seqs)]), next_seq)

    def chunks_after(self, after_seq: int) -> list[SeqChunk]:
        """All retained chunks with seq > after_seq (for Attach replay)."""
        # Scan from the newest end: a live follower is usually only a few chunks behind.
        found: list[SeqChunk] = []
        for chunk in reversed(self._chunks):
            if chunk.seq <= after_seq:
                break
            found.append(chunk)
        found.reverse()
        return found
