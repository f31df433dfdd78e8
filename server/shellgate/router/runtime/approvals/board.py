"""Where operator-routed approvals wait for a decision (docs/approvals.md): the board.

One entry per approval: its `PendingView`, the replica whose Execute stream waits, and a
status that moves once, atomically, from `pending` to `decided` (an operator), `expired`
(the deadline's fallback) — or the entry is withdrawn (the caller left). A settled entry
stays as a tombstone for `TOMBSTONE_MS` past its deadline so a late decision is told
`already_decided` or `approval_expired` instead of NOT_FOUND. In one router the board is
this module's in-memory one; with Redis, `redis_board.RedisBoard` (any replica lists and
decides, the waiting replica is woken over the replica bus and polls as a fallback).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    BoardStatus,
    SettleOutcome,
)

__all__ = [
    "BOARD_SLOT",
    "TOMBSTONE_MS",
    "BoardEntry",
    "InMemoryBoard",
    "OperatorBoard",
    "Settle",
]

# How long a settled entry answers late decisions past its deadline (then NOT_FOUND).
TOMBSTONE_MS = 10 * 60 * 1000

# The thread's pending record of an operator-routed approval carries no call: the approval
# lives once, here on the board (view, waiting replica, status); the thread's record only
# holds its place in the per-thread and router-wide pending caps.
BOARD_SLOT = ""


@dataclass(frozen=True)
class BoardEntry:
    """One operator approval: what operators see, who waits for it, and how it was settled."""

    view: PendingView
    replica: str
    status: BoardStatus = BoardStatus.PENDING
    decision: ApprovalDecision | None = None  # None while pending
    # Who settled it: the operator's subject, or `deadline` for the fallback.
    operator: str = ""


@dataclass(frozen=True)
class Settle:
    """How a settle attempt went: OK, or why not (MISSING, DECIDED, EXPIRED)."""

    outcome: SettleOutcome


class OperatorBoard(Protocol):
    """The store of operator approvals, shared by every replica."""

    async def post(self, entry: BoardEntry) -> None:
        """Publish a new pending approval (kept until its deadline plus the tombstone)."""
        ...

    async def get(self, approval_id: str) -> BoardEntry | None:
        """The entry, settled or not; None when withdrawn or gone."""
        ...

    async def pending(self, now_ms: int) -> list[BoardEntry]:
        """Entries still pending before their deadline, oldest first (expired ones pruned)."""
        ...

    async def settle(
        self,
        approval_id: str,
        status: BoardStatus,
        decision: ApprovalDecision,
        operator: str,
        now_ms: int | None,
    ) -> Settle:
        """Move a pending entry to `status` once (one settler wins, on any replica);
        with `now_ms`, refused past the deadline (`expired`)."""
        ...

    async def withdraw(self, approval_id: str) -> None:
        """Forget an entry (its caller left: nothing will run)."""
        ...

    async def changed(self, approval_id: str, timeout_s: float) -> None:
        """Wait until the entry may have changed (a settle was announced), at most `timeout_s`."""
        ...

    def release(self, approval_id: str) -> None:
        """The waiting call is over: drop its local wake-up state."""
        ...


class InMemoryBoard:
    """The board of one router (no replicas): a dict and an event per waiting approval."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._entries: dict[str, tuple[BoardEntry, float]] = {}
        self._events: dict[str, asyncio.Event] = {}
        self._clock = clock

    def _prune(self) -> None:
        now = self._clock()
        for approval_id in [a for a, (_, gone) in self._entries.items() if gone <= now]:
            del self._entries[approval_id]

    async def post(self, entry: BoardEntry) -> None:
        """Publish a new pending approval."""
        self._prune()
        gone = (entry.view.deadline_ms + TOMBSTONE_MS) / 1000
        self._entries[entry.view.approval_id] = (entry, gone)

    async def get(self, approval_id: str) -> BoardEntry | None:
        """The entry, or None."""
        self._prune()
        found = self._entries.get(approval_id)
        return found[0] if found is not None else None

    async def pending(self, now_ms: int) -> list[BoardEntry]:
        """Pending entries before their deadline, oldest first."""
        self._prune()
        live = [
            e for e, _ in self._entries.values()
            if e.status is BoardStatus.PENDING and e.view.deadline_ms > now_ms
        ]  # fmt: skip
        return sorted(live, key=lambda e: (e.view.created_at_ms, e.view.approval_id))

    async def settle(
        self,
        approval_id: str,
        status: BoardStatus,
        decision: ApprovalDecision,
        operator: str,
        now_ms: int | None,
    ) -> Settle:
        """Settle once; the event wakes the waiting call."""
        self._prune()
        found = self._entries.get(approval_id)
        if found is None:
            return Settle(SettleOutcome.MISSING)
        entry, gone = found
        if entry.status is not BoardStatus.PENDING:
            return Settle(SettleOutcome(entry.status))
        if now_ms is not None and now_ms >= entry.view.deadline_ms:
            return Settle(SettleOutcome.EXPIRED)
        settled = replace(entry, status=status, decision=decision, operator=operator)
        self._entries[approval_id] = (settled, gone)
        self.wake(approval_id)
        return Settle(SettleOutcome.OK)

    async def withdraw(self, approval_id: str) -> None:
        """Forget the entry."""
        self._entries.pop(approval_id, None)
        self._events.pop(approval_id, None)

    def release(self, approval_id: str) -> None:
        """Drop the wake-up event of a call no longer waiting."""
        self._events.pop(approval_id, None)

    def wake(self, approval_id: str | None = None) -> None:
        """Wake the call waiting for `approval_id` (None: every waiting call)."""
        events = self._events.values() if approval_id is None else [self._events.get(approval_id)]
        for event in events:
            if event is not None:
                event.set()

    async def changed(self, approval_id: str, timeout_s: float) -> None:
        """Wait for a wake-up, at most `timeout_s`."""
        event = self._events.setdefault(approval_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), max(timeout_s, 0.0))
        except TimeoutError:
            pass
        finally:
            event.clear()
