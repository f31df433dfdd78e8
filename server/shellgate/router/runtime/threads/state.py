"""One thread as one router holds it (spec 06 §2): approval cache, grants, parked calls, calls.

The shared parts (approvals, grants, parked calls, remote sessions) live in `shared`; what
stays here are live objects: in-flight calls (Interrupt sets their event) and sessions.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from shellgate.common.errors import (
    SharedStateUnavailableError,
    UnknownApprovalError,
    UnknownCallError,
)
from shellgate.router.runtime.store.memory_state import InMemorySharedState
from shellgate.router.runtime.store.shared_state import PendingRecord, SharedState
from shellgate.router.runtime.threads.sessions import SessionManager
from shellgate.router.runtime.threads.tally import CountedDict, StateLimits, Tally

__all__ = ["EndedThread", "InFlightCall", "PendingApproval", "ThreadState"]

Clock = Callable[[], float]


@dataclass
class PendingApproval:
    """A call stopped at `approval_required`; `payload` is its stored form (parked_codec JSON).

    The payload is data, never a live object, and lives in the shared store: any router
    of the thread can resume it, including after the one that parked it died.
    """

    approval_id: str
    call_id: str
    payload: str
    created_at: float
    expires_at: float


@dataclass
class InFlightCall:
    """An Execute that is running now; `interrupt` is set by Interrupt."""

    call_id: str
    started_at: float
    interrupt: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class EndedThread:
    """What ending a thread cleaned up."""

    terminated_sessions: int
    dropped_pending_approvals: int


class ThreadState:
    """What one router holds of a thread; shared parts live in `shared` (spec 06 §2)."""

    def __init__(
        self,
        thread_id: str,
        *,
        clock: Clock,
        approval_ttl_ms: int,
        sessions: SessionManager,
        shared: SharedState | None = None,
        instance_id: str = "",
        generation: str = "",
        max_pending: int = 32,
        pending_tally: Tally | None = None,
    ) -> None:
        self.thread_id = thread_id
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        self.shared: SharedState = shared or InMemorySharedState(clock)
        self.instance_id = instance_id
        self.generation = generation
        # Created while the store was down: it joins the store's thread (its generation).
        self.provisional = False
        self._max_pending = max_pending
        # Approvals parked through this router (id → expiry), counted router-wide for
        # `max_pending_approvals`; one resumed elsewhere leaves at the next room check.
        self.parked: dict[str, float] = CountedDict(
            pending_tally or StateLimits(max_pending=max_pending).tallies()[0]
        )
        self.inflight: dict[str, InFlightCall] = {}
        self.sessions = sessions
        self.last_used = clock()

    def touch(self) -> None:
        """Mark the thread as used now (resets its idle TTL)."""
        self.last_used = self._clock()

    @property
    def busy(self) -> bool:
        """Whether something of it is live here (a call, a parked call, a session)."""
        return bool(self.inflight or self.parked or self.sessions)

    # --- approvals and grants (shared) ---------------------------------------------------

    async def is_approved_for_session(self, digest: str) -> bool:
        """Whether this approval key was approved for the session (any router)."""
        return await self.shared.is_approved(self.thread_id, digest)

    async def approve_for_session(self, digest: str) -> None:
        """Cache an approval key for the rest of the thread."""
        await self.shared.approve(self.thread_id, digest)

    async def set_grant(self, key: str, value: str) -> None:
        """Store a session-scope permission grant (opaque JSON text)."""
        await self.shared.set_grant(self.thread_id, key, value)

    async def grants(self) -> dict[str, str]:
        """The thread's sticky grants."""
        return await self.shared.grants(self.thread_id)

    # --- pending approvals ---------------------------------------------------------------

    async def check_pending_room(self) -> None:
        """RESOURCE_EXHAUSTED when one more parked call would cross a pending-approval limit."""
        try:
            live = await self.shared.live_pending_ids(self.thread_id)
        except SharedStateUnavailableError:
            # The store is down: a call that parks fails there anyway; others must run.
            live = set(self.parked)
        for approval_id in [a for a in self.parked if a not in live]:
            del self.parked[approval_id]
        if len(live) >= self._max_pending:
            raise StateLimits.thread_pending_full(self._max_pending)
        assert isinstance(self.parked, CountedDict)
        self.parked.tally.check()

    async def add_pending(self, call_id: str, payload: str) -> PendingApproval:
        """Park a call (its stored form) under a fresh UUIDv4 approval id for `approval_ttl`."""
        await self.check_pending_room()
        now = self._clock()
        pending = PendingApproval(
            approval_id=str(uuid.uuid4()),
            call_id=call_id,
            payload=payload,
            created_at=now,
            expires_at=now + self._approval_ttl_ms / 1000,
        )
        record = PendingRecord(pending.approval_id, call_id, self.instance_id, payload)
        await self.shared.put_pending(self.thread_id, record, self._approval_ttl_ms)
        self.parked[pending.approval_id] = pending.expires_at
        return pending

    async def take_pending(self, approval_id: str) -> PendingApproval:
        """Remove and return a pending call atomically (on any router, one taker wins);
        unknown, expired, already taken or ended → NOT_FOUND."""
        record = await self.shared.take_pending(self.thread_id, approval_id)
        self.parked.pop(approval_id, None)
        if record is None:
            raise UnknownApprovalError(f"unknown or expired approval_id {approval_id}")
        now = self._clock()
        return PendingApproval(
            approval_id, record.call_id, record.payload, now, now + record.ttl_ms / 1000
        )

    async def put_back(self, pending: PendingApproval) -> None:
        """Re-park a call taken by mistake (a decision not on offer), keeping its expiry."""
        remaining_ms = int((pending.expires_at - self._clock()) * 1000)
        if remaining_ms <= 0:
            return
        record = PendingRecord(
            pending.approval_id, pending.call_id, self.instance_id, pending.payload
        )
        await self.shared.put_pending(self.thread_id, record, remaining_ms)
        self.parked[pending.approval_id] = pending.expires_at

    def expire_pending(self) -> int:
        """Forget this router's count of parked calls past their TTL (the store expires the
        records themselves); returns how many."""
        now = self._clock()
        expired = [a for a, expires_at in self.parked.items() if expires_at <= now]
        for approval_id in expired:
            del self.parked[approval_id]
        return len(expired)

    # --- in-flight calls -----------------------------------------------------------------

    def begin_call(self, call_id: str) -> InFlightCall:
        """Register an in-flight call so Interrupt can reach it."""
        call = InFlightCall(call_id, self._clock())
        self.inflight[call_id] = call
        return call

    def end_call(self, call: InFlightCall) -> None:
        """Forget an in-flight call (only if it is still the registered one)."""
        if self.inflight.get(call.call_id) is call:
            del self.inflight[call.call_id]

    def interrupt_local(self, call_id: str) -> bool:
        """Interrupt an in-flight call of this router; whether it runs here."""
        call = self.inflight.get(call_id)
        if call is None:
            return False
        call.interrupt.set()
        return True

    def interrupt(self, call_id: str) -> None:
        """Interrupt an in-flight call of this router; none → NOT_FOUND."""
        if not self.interrupt_local(call_id):
            raise UnknownCallError(f"no in-flight call {call_id}")

    async def close_local(self) -> EndedThread:
        """Kill this router's sessions of the thread, interrupt its calls (parked calls are
        shared: they are dropped with the thread's shared state)."""
        self.parked.clear()
        for call in self.inflight.values():
            call.interrupt.set()
        terminated = await self.sessions.terminate_all()
        return EndedThread(terminated, 0)
