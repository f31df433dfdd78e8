"""Thread registry (spec 06 §2): approval cache, grants, pending approvals, sessions, calls."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from shellgate.common.errors import (
    InvalidArgumentError,
    LimitExceededError,
    PendingElsewhereError,
    UnknownApprovalError,
    UnknownCallError,
    UnknownThreadError,
)
from shellgate.router.runtime.sessions import SessionManager
from shellgate.router.runtime.store.shared_sessions import SessionEnvironments, terminate_records
from shellgate.router.runtime.store.shared_state import (
    InMemorySharedState,
    PendingRecord,
    SharedState,
)

__all__ = [
    "DEFAULT_APPROVAL_TTL_MS",
    "DEFAULT_THREAD_IDLE_TTL_MS",
    "EndedThread",
    "InFlightCall",
    "InMemoryThreadStore",
    "PendingApproval",
    "ThreadRegistry",
    "ThreadState",
    "ThreadStore",
    "owned_thread_key",
    "validate_thread_id",
]

# Spec 06 §3.2 and §2: pending calls live 10 minutes, idle threads 24 hours.
DEFAULT_APPROVAL_TTL_MS = 10 * 60_000
DEFAULT_THREAD_IDLE_TTL_MS = 24 * 3_600_000
_THREAD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# Registry keys: a caller's thread id, optionally behind its subject's namespace.
_THREAD_KEY = re.compile(r"[A-Za-z0-9._:-]{1,160}")
_SUBJECT_DIGEST_CHARS = 16

Clock = Callable[[], float]


def validate_thread_id(thread_id: str) -> str:
    """Return the id, or raise INVALID_ARGUMENT (1-128 chars of [A-Za-z0-9._:-])."""
    if not _THREAD_ID.fullmatch(thread_id):
        raise InvalidArgumentError("thread_id: must be 1-128 characters of [A-Za-z0-9._:-]")
    return thread_id


def owned_thread_key(subject: str, thread_id: str) -> str:
    """The registry key of `subject`'s thread `thread_id` (the id checked first).

    Threads belong to the authenticated subject that names them: the key is the id behind
    a digest of the subject, so another subject choosing the same id reaches a different,
    empty thread (its lookups answer NOT_FOUND) and can never name this one: not its
    sessions, parked approvals, grants or in-flight calls, on any replica (every replica
    computes the same key).
    """
    validate_thread_id(thread_id)
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:_SUBJECT_DIGEST_CHARS]}.{thread_id}"


def _check_key(key: str) -> str:
    if not _THREAD_KEY.fullmatch(key):
        raise InvalidArgumentError("thread_id: must be 1-128 characters of [A-Za-z0-9._:-]")
    return key


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
    ) -> None:
        self.thread_id = thread_id
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        self.shared: SharedState = shared or InMemorySharedState(clock)
        self.instance_id = instance_id
        self.generation = generation
        # Parked calls' continuations (live objects: they stay with this router).
        self.pending: dict[str, PendingApproval] = {}
        self.inflight: dict[str, InFlightCall] = {}
        self.sessions = sessions
        self.last_used = clock()

    def touch(self) -> None:
        """Mark the thread as used now (resets its idle TTL)."""
        self.last_used = self._clock()

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

    async def add_pending(self, call_id: str, payload: object) -> PendingApproval:
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
        record = PendingRecord(pending.approval_id, call_id, self.instance_id)
        await self.shared.put_pending(self.thread_id, record, self._approval_ttl_ms)
        self.pending[pending.approval_id] = pending
        return pending

    async def take_pending(self, approval_id: str) -> PendingApproval:
        """Remove and return a pending call; unknown, expired or ended → NOT_FOUND."""
        self.expire_pending()
        record = await self.shared.get_pending(self.thread_id, approval_id)
        local = self.pending.get(approval_id)
        if record is None:
            # Expired, answered, or its thread was ended through another router.
            self.pending.pop(approval_id, None)
            raise UnknownApprovalError(f"unknown or expired approval_id {approval_id}")
        if local is None:
            raise PendingElsewhereError(
                f"approval_id {approval_id} is pending on router instance "
                f"{record.instance_id}; resume it there"
            )
        if not await self.shared.take_pending(self.thread_id, approval_id):
            self.pending.pop(approval_id, None)
            raise UnknownApprovalError(f"unknown or expired approval_id {approval_id}")
        del self.pending[approval_id]
        return local

    async def put_back(self, pending: PendingApproval) -> None:
        """Re-park a call taken by mistake (a decision not on offer), keeping its expiry."""
        remaining_ms = int((pending.expires_at - self._clock()) * 1000)
        if remaining_ms <= 0:
            return
        record = PendingRecord(pending.approval_id, pending.call_id, self.instance_id)
        await self.shared.put_pending(self.thread_id, record, remaining_ms)
        self.pending[pending.approval_id] = pending

    def expire_pending(self) -> int:
        """Drop local parked calls past their TTL; returns how many."""
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

    async def close_local(self) -> EndedThread:
        """Kill this router's sessions of the thread, drop its parked calls."""
        dropped = len(self.pending)
        self.pending.clear()
        for call in self.inflight.values():
            call.interrupt.set()
        terminated = await self.sessions.terminate_all()
        return EndedThread(terminated, dropped)


class ThreadStore(Protocol):
    """Where threads live (the servicer's view)."""

    async def get_or_create(self, thread_id: str) -> ThreadState:
        """The thread, created on first use."""
        ...

    async def get(self, thread_id: str) -> ThreadState:
        """An existing thread; unknown → NOT_FOUND."""
        ...

    async def end(self, thread_id: str) -> EndedThread:
        """End a thread; idempotent: an unknown or already ended thread ends with zero counts."""
        ...

    async def sweep_idle(self) -> list[str]:
        """End threads idle longer than the TTL; returns their ids."""
        ...

    async def expire_pending(self) -> int:
        """Drop parked calls past their approval TTL; returns how many."""
        ...

    async def keep_sessions_alive(self) -> int:
        """Renew the daemon owner TTL of live threads' shared sessions; returns how many."""
        ...

    async def aclose(self) -> None:
        """Close every thread of this router (service shutdown)."""
        ...


class ThreadRegistry:
    """This router's threads over a SharedState (in memory by default, or Redis).

    With a distributed store the thread's approvals, grants, pending records and remote
    sessions are visible to every router; local processes and parked continuations stay
    here. A thread ended through another router is noticed by its generation changing.
    """

    def __init__(
        self,
        *,
        session_factory: Callable[[str], SessionManager] | None = None,
        clock: Clock = time.monotonic,
        approval_ttl_ms: int = DEFAULT_APPROVAL_TTL_MS,
        idle_ttl_ms: int = DEFAULT_THREAD_IDLE_TTL_MS,
        shared: SharedState | None = None,
        environments: SessionEnvironments | None = None,
        instance_id: str = "",
        max_threads: int = 10_000,
    ) -> None:
        self._threads: dict[str, ThreadState] = {}
        self._max_threads = max_threads
        self._session_factory = session_factory or (lambda _tid: SessionManager())
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        self._idle_ttl_ms = idle_ttl_ms
        self.shared: SharedState = shared or InMemorySharedState(clock)
        self._environments = environments
        self._instance_id = instance_id or uuid.uuid4().hex

    def _check_room(self) -> None:
        # `max_threads` bounds the threads this router holds state for (each keeps an
        # approval cache, sessions and parked calls); past it a new thread is refused
        # rather than evicting a live one whose sessions would be killed.
        if len(self._threads) >= self._max_threads:
            raise LimitExceededError(
                f"thread limit reached: this router holds {len(self._threads)} threads "
                f"(limits.max_threads = {self._max_threads}); end idle threads with EndThread"
            )

    def _new(self, thread_id: str, generation: str) -> ThreadState:
        self._check_room()
        sessions = self._session_factory(thread_id)
        sessions.bind(thread_id, self.shared, self._environments, self._instance_id)
        state = ThreadState(
            thread_id,
            clock=self._clock,
            approval_ttl_ms=self._approval_ttl_ms,
            sessions=sessions,
            shared=self.shared,
            instance_id=self._instance_id,
            generation=generation,
        )
        self._threads[thread_id] = state
        return state

    async def _sync(self, thread_id: str, generation: str | None) -> ThreadState | None:
        """The local state matching the shared generation (a stale one is closed)."""
        state = self._threads.get(thread_id)
        if state is not None and state.generation != generation:
            # Ended (or expired) through another router: forget what this router held. An
            # expired thread's daemon processes die here (an ended one's are gone already).
            del self._threads[thread_id]
            await state.close_local()
            if self.shared.distributed:
                await state.sessions.kill_known()
            state = None
        if state is None and generation is not None:
            state = self._new(thread_id, generation)
        if state is not None:
            state.touch()
            await state.sessions.refresh()
        return state

    async def get_or_create(self, thread_id: str) -> ThreadState:
        """The thread, created on first use (on any router)."""
        _check_key(thread_id)
        if thread_id not in self._threads:
            self._check_room()  # before the shared record exists, so a refusal leaves none
        generation = await self.shared.ensure_thread(thread_id, uuid.uuid4().hex)
        state = await self._sync(thread_id, generation)
        assert state is not None
        return state

    async def get(self, thread_id: str) -> ThreadState:
        """An existing thread; unknown → NOT_FOUND."""
        _check_key(thread_id)
        state = await self._sync(thread_id, await self.shared.thread_generation(thread_id))
        if state is None:
            raise UnknownThreadError(f"unknown thread {thread_id}")
        return state

    async def end(self, thread_id: str) -> EndedThread:
        """End a thread everywhere: sessions killed, approvals and pending calls dropped.

        Idempotent: a thread no router holds state for (never used, already ended, expired)
        ends with zero counts, so a harness may end a conversation without tracking it.
        """
        _check_key(thread_id)
        generation = await self.shared.thread_generation(thread_id)
        state = self._threads.pop(thread_id, None)
        if generation is None and state is None:
            return EndedThread(0, 0)
        local = await state.close_local() if state is not None else EndedThread(0, 0)
        records, pending = await self.shared.drop_thread(thread_id)
        remote = await terminate_records(records, self._environments)
        return EndedThread(local.terminated_sessions + remote, pending)

    async def sweep_idle(self) -> list[str]:
        """End threads idle here longer than the TTL (nothing in flight); returns their ids.

        With a distributed store only this router's part is closed: the shared keys expire
        by themselves with the same TTL, and another router may still be using the thread.
        """
        now = self._clock()
        idle = [
            tid
            for tid, st in self._threads.items()
            if not st.inflight and now - st.last_used >= self._idle_ttl_ms / 1000
        ]
        for tid in idle:
            state = self._threads.pop(tid)
            await state.close_local()
            if not self.shared.distributed:
                await self.shared.drop_thread(tid)
            elif not await self.shared.thread_alive(tid):
                # Expired everywhere (Redis dropped its keys): nobody else will kill the
                # thread's daemon processes, and Redis expiry alone does not.
                await state.sessions.kill_known()
        return idle

    async def keep_sessions_alive(self) -> int:
        """Renew the daemon owner TTL of the shared sessions of threads still alive.

        Every router does it for the threads it holds, so a session lives as long as its
        thread does (not just its daemon owner TTL past the last poll).
        """
        if not self.shared.distributed:
            return 0
        count = 0
        for tid, state in list(self._threads.items()):
            if await self.shared.thread_alive(tid):
                count += await state.sessions.keep_alive()
        return count

    async def expire_pending(self) -> int:
        """Drop parked calls past their approval TTL in every local thread."""
        return sum(state.expire_pending() for state in self._threads.values())

    async def aclose(self) -> None:
        """Close this router's part of every thread, then the shared store's connections."""
        threads, self._threads = list(self._threads.values()), {}
        for state in threads:
            await state.close_local()
            if not self.shared.distributed:
                await self.shared.drop_thread(state.thread_id)
        await self.shared.aclose()

    def __len__(self) -> int:
        return len(self._threads)


# The name the router app uses; the default SharedState is in memory.
InMemoryThreadStore = ThreadRegistry
