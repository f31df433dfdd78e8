"""Thread registry (spec 06 §2): approval cache, grants, pending approvals, sessions, calls."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from shellgate.router.runtime.errors import (
    InvalidRuntimeArgumentError,
    UnknownApprovalError,
    UnknownCallError,
    UnknownThreadError,
)
from shellgate.router.runtime.sessions import SessionManager

__all__ = [
    "DEFAULT_APPROVAL_TTL_MS",
    "DEFAULT_THREAD_IDLE_TTL_MS",
    "EndedThread",
    "InFlightCall",
    "InMemoryThreadStore",
    "PendingApproval",
    "ThreadState",
    "ThreadStore",
    "validate_thread_id",
]

# Spec 06 §3.2 and §2: pending calls live 10 minutes, idle threads 24 hours.
DEFAULT_APPROVAL_TTL_MS = 10 * 60_000
DEFAULT_THREAD_IDLE_TTL_MS = 24 * 3_600_000
_THREAD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

Clock = Callable[[], float]


def validate_thread_id(thread_id: str) -> str:
    """Return the id, or raise INVALID_ARGUMENT (1-128 chars of [A-Za-z0-9._:-])."""
    if not _THREAD_ID.fullmatch(thread_id):
        raise InvalidRuntimeArgumentError("thread_id: must be 1-128 characters of [A-Za-z0-9._:-]")
    return thread_id


@dataclass
class PendingApproval:
    """A call stopped at `approval_required`; `payload` is the orchestrator's continuation."""

    approval_id: str
    call_id: str
    payload: object
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
    """Everything one thread owns; only the store creates and ends it."""

    def __init__(
        self,
        thread_id: str,
        *,
        clock: Clock,
        approval_ttl_ms: int,
        sessions: SessionManager,
    ) -> None:
        self.thread_id = thread_id
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        # Approval key digests approved "for session" (spec 06 §3.4, §8).
        self.approval_cache: set[str] = set()
        # Session-scope permission grants, by environment id (opaque to the runtime).
        self.sticky_grants: dict[str, object] = {}
        self.pending: dict[str, PendingApproval] = {}
        self.inflight: dict[str, InFlightCall] = {}
        self.sessions = sessions
        self.last_used = clock()

    def touch(self) -> None:
        """Mark the thread as used now (resets its idle TTL)."""
        self.last_used = self._clock()

    # --- approvals ---------------------------------------------------------------------

    def is_approved_for_session(self, digest: str) -> bool:
        """Whether this approval key was approved for the session."""
        return digest in self.approval_cache

    def approve_for_session(self, digest: str) -> None:
        """Cache an approval key for the rest of the thread."""
        self.approval_cache.add(digest)

    def add_pending(self, call_id: str, payload: object) -> PendingApproval:
        """Park a call under a fresh UUIDv4 approval id for `approval_ttl`."""
        self.expire_pending()
        now = self._clock()
        pending = PendingApproval(
            approval_id=str(uuid.uuid4()),
            call_id=call_id,
            payload=payload,
            created_at=now,
            expires_at=now + self._approval_ttl_ms / 1000,
        )
        self.pending[pending.approval_id] = pending
        return pending

    def take_pending(self, approval_id: str) -> PendingApproval:
        """Remove and return a pending call; unknown or expired → NOT_FOUND."""
        self.expire_pending()
        pending = self.pending.pop(approval_id, None)
        if pending is None:
            raise UnknownApprovalError(f"unknown or expired approval_id {approval_id}")
        return pending

    def expire_pending(self) -> int:
        """Drop pending calls past their TTL; returns how many."""
        now = self._clock()
        expired = [k for k, p in self.pending.items() if p.expires_at <= now]
        for key in expired:
            del self.pending[key]
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

    def interrupt(self, call_id: str) -> None:
        """Interrupt an in-flight call; none → NOT_FOUND."""
        call = self.inflight.get(call_id)
        if call is None:
            raise UnknownCallError(f"no in-flight call {call_id}")
        call.interrupt.set()

    async def close(self) -> EndedThread:
        """Terminate sessions, drop approvals and pending calls (EndThread)."""
        dropped = len(self.pending)
        self.pending.clear()
        self.approval_cache.clear()
        self.sticky_grants.clear()
        for call in self.inflight.values():
            call.interrupt.set()
        terminated = await self.sessions.terminate_all()
        return EndedThread(terminated, dropped)


class ThreadStore(Protocol):
    """Where threads live; in memory now, a shared store (e.g. Redis) can come later."""

    async def get_or_create(self, thread_id: str) -> ThreadState:
        """The thread, created on first use."""
        ...

    async def get(self, thread_id: str) -> ThreadState:
        """An existing thread; unknown → NOT_FOUND."""
        ...

    async def end(self, thread_id: str) -> EndedThread:
        """End a thread; unknown → NOT_FOUND."""
        ...

    async def sweep_idle(self) -> list[str]:
        """End threads idle longer than the TTL; returns their ids."""
        ...

    async def aclose(self) -> None:
        """End every thread (service shutdown)."""
        ...


class InMemoryThreadStore:
    """Threads in this process's memory."""

    def __init__(
        self,
        *,
        session_factory: Callable[[str], SessionManager] | None = None,
        clock: Clock = time.monotonic,
        approval_ttl_ms: int = DEFAULT_APPROVAL_TTL_MS,
        idle_ttl_ms: int = DEFAULT_THREAD_IDLE_TTL_MS,
    ) -> None:
        self._threads: dict[str, ThreadState] = {}
        self._session_factory = session_factory or (lambda _tid: SessionManager())
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        self._idle_ttl_ms = idle_ttl_ms

    async def get_or_create(self, thread_id: str) -> ThreadState:
        """The thread, created on first use."""
        validate_thread_id(thread_id)
        state = self._threads.get(thread_id)
        if state is None:
            state = ThreadState(
                thread_id,
                clock=self._clock,
                approval_ttl_ms=self._approval_ttl_ms,
                sessions=self._session_factory(thread_id),
            )
            self._threads[thread_id] = state
        state.touch()
        return state

    async def get(self, thread_id: str) -> ThreadState:
        """An existing thread; unknown → NOT_FOUND."""
        validate_thread_id(thread_id)
        state = self._threads.get(thread_id)
        if state is None:
            raise UnknownThreadError(f"unknown thread {thread_id}")
        state.touch()
        return state

    async def end(self, thread_id: str) -> EndedThread:
        """End a thread; unknown → NOT_FOUND."""
        validate_thread_id(thread_id)
        state = self._threads.pop(thread_id, None)
        if state is None:
            raise UnknownThreadError(f"unknown thread {thread_id}")
        return await state.close()

    async def sweep_idle(self) -> list[str]:
        """End threads idle longer than the TTL (nothing in flight); returns their ids."""
        now = self._clock()
        idle = [
            tid
            for tid, st in self._threads.items()
            if not st.inflight and now - st.last_used >= self._idle_ttl_ms / 1000
        ]
        for tid in idle:
            state = self._threads.pop(tid)
            await state.close()
        return idle

    async def aclose(self) -> None:
        """End every thread."""
        threads, self._threads = list(self._threads.values()), {}
        for state in threads:
            await state.close()

    def __len__(self) -> int:
        return len(self._threads)
