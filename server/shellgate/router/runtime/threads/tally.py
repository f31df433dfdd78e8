"""Bounds on the router's per-thread state, and router-wide counts checked in O(1)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from shellgate.common.errors import LimitExceededError
from shellgate.router.output.unified_rules import MAX_UNIFIED_EXEC_PROCESSES

__all__ = [
    "SUBJECT_DIGEST_CHARS",
    "CountedDict",
    "CountedSet",
    "StateLimits",
    "Tally",
    "eviction_victim",
    "fair_share",
    "least_recently_used",
    "subject_of",
]

# Owned thread keys start with this many hex digits of the subject's digest and a dot.
SUBJECT_DIGEST_CHARS = 16
_HEX = frozenset("0123456789abcdef")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Used(Protocol):
    last_used: float


U = TypeVar("U", bound=_Used)


@dataclass(frozen=True)
class StateLimits:
    """The `[limits]` keys bounding thread state (defaults as RouterConfig's)."""

    max_pending_per_thread: int = 32
    max_pending: int = 1_024
    # Codex's MAX_UNIFIED_EXEC_PROCESSES: past it a thread prunes one (spec 05 §3.5).
    max_sessions_per_thread: int = MAX_UNIFIED_EXEC_PROCESSES
    max_sessions: int = 1_024

    def tallies(self) -> tuple[Tally, Tally]:
        """Fresh router-wide counts: parked approvals, then unified-exec sessions."""
        return (
            Tally(self.max_pending, "limits.max_pending_approvals", "parked approvals"),
            Tally(self.max_sessions, "limits.max_unified_sessions", "unified-exec sessions"),
        )

    @staticmethod
    def thread_pending_full(limit: int) -> LimitExceededError:
        """The refusal of a thread with `limit` unanswered approvals."""
        return LimitExceededError(
            f"this thread has {limit} unanswered approvals "
            f"(limits.max_pending_approvals_per_thread = {limit}); answer them, let them "
            "expire or end the thread",
            limit="limits.max_pending_approvals_per_thread",
        )


def least_recently_used(items: Iterable[U]) -> U | None:
    """The item used longest ago, or None when there is none."""
    return min(items, key=lambda item: item.last_used, default=None)


class Tally:
    """How many of something all threads hold together, and the configured bound on it."""

    def __init__(self, limit: int, limit_key: str, what: str) -> None:
        self.limit = limit
        self.limit_key = limit_key
        self.what = what
        self.count = 0
        # Called once before refusing, to drop what has expired but is still counted.
        self.reclaim: Callable[[], object] | None = None

    def full(self) -> bool:
        """Whether one more would cross the bound."""
        return self.count >= self.limit

    def check(self) -> None:
        """RESOURCE_EXHAUSTED naming the limit when one more would cross it."""
        if self.full() and self.reclaim is not None:
            self.reclaim()
        if self.full():
            raise LimitExceededError(
                f"too many {self.what} on this router ({self.limit_key} = {self.limit}); "
                "retry later",
                limit=self.limit_key,
            )


class CountedDict(dict[K, V]):
    """A dict whose size is also counted in a shared Tally (only the mutators used here)."""

    def __init__(self, tally: Tally) -> None:
        super().__init__()
        self.tally = tally

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self:
            self.tally.count += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        self.tally.count -= 1

    def pop(self, key: K, *default: V) -> V:  # type: ignore[override]
        """Remove and return; counted when present."""
        if key in self:
            self.tally.count -= 1
        return super().pop(key, *default)

    def clear(self) -> None:
        """Remove everything; counted."""
        self.tally.count -= len(self)
        super().clear()


class CountedSet(set[K]):
    """A set whose size is also counted in a shared Tally (add and discard only)."""

    def __init__(self, tally: Tally) -> None:
        super().__init__()
        self.tally = tally

    def add(self, item: K) -> None:
        """Add; counted when new."""
        if item not in self:
            self.tally.count += 1
        super().add(item)

    def discard(self, item: object) -> None:
        """Remove if present; counted."""
        if item in self:
            self.tally.count -= 1
        super().discard(item)


class _Evictable(_Used, Protocol):
    thread_id: str

    @property
    def busy(self) -> bool: ...


E = TypeVar("E", bound=_Evictable)


def subject_of(thread_key: str) -> str:
    """The subject part of an owned thread key (`registry.owned_thread_key`), else ''."""
    head, dot, _ = thread_key.partition(".")
    if dot and len(head) == SUBJECT_DIGEST_CHARS and all(c in _HEX for c in head):
        return head
    return ""


def fair_share(max_threads: int, subjects: Iterable[str]) -> int:
    """`max_threads` split evenly between the subjects holding threads (at least 1)."""
    return max(1, max_threads // max(1, len(set(subjects))))


def eviction_victim(threads: Iterable[E], subject: str, max_threads: int) -> E | None:
    """The idle thread to end so `subject` gets a new one, or None (docs/limits.md).

    Below its fair share, a subject takes room from the subject most over its share (that
    one's least recently used idle thread); otherwise it ends its own least recently used
    idle thread first, and another subject's only while that one is over its share. No
    subject's new threads ever push another below its share.
    """
    held = list(threads)
    idle = [t for t in held if not t.busy]
    counts = Counter(subject_of(t.thread_id) for t in held)
    share = fair_share(max_threads, [*counts, subject])
    over = sorted((s for s in counts if s != subject and counts[s] > share),
                  key=lambda s: -counts[s])  # fmt: skip
    own = [t for t in idle if subject_of(t.thread_id) == subject]
    if counts[subject] < share or not own:
        for other in over:
            victim = least_recently_used(t for t in idle if subject_of(t.thread_id) == other)
            if victim is not None:
                return victim
    return least_recently_used(own)
