"""Bounds on the router's per-thread state, and router-wide counts checked in O(1)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from shellgate.common.errors import LimitExceededError
from shellgate.router.output.unified_rules import MAX_UNIFIED_EXEC_PROCESSES

__all__ = [
    "CountedDict",
    "CountedSet",
    "StateLimits",
    "Tally",
    "least_recently_used",
]

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
