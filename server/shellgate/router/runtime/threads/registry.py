"""Thread registry (spec 06 §2): approval cache, grants, pending approvals, sessions, calls."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from shellgate.common.errors import (
    InvalidArgumentError,
    LimitExceededError,
    SharedStateUnavailableError,
    UnknownCallError,
    UnknownSessionError,
    UnknownThreadError,
)
from shellgate.router.runtime.store.memory_state import InMemorySharedState
from shellgate.router.runtime.store.shared_state import SharedState
from shellgate.router.runtime.threads import store_recovery
from shellgate.router.runtime.threads.sessions import SessionManager
from shellgate.router.runtime.threads.shared_records import SessionEnvironments, terminate_records
from shellgate.router.runtime.threads.state import (
    EndedThread,
    InFlightCall,
    PendingApproval,
    ThreadState,
)
from shellgate.router.runtime.threads.tally import (
    SUBJECT_DIGEST_CHARS,
    StateLimits,
    eviction_victim,
    fair_share,
    subject_of,
)

__all__ = [
    "DEFAULT_APPROVAL_TTL_MS",
    "DEFAULT_THREAD_IDLE_TTL_MS",
    "EndedThread",
    "InFlightCall",
    "InMemoryThreadStore",
    "PendingApproval",
    "ReplicaBus",
    "ThreadRegistry",
    "ThreadState",
    "ThreadStore",
    "owned_thread_key",
    "validate_thread_id",
]

_log = logging.getLogger(__name__)

# Spec 06 §3.2 and §2: pending calls live 10 minutes, idle threads 24 hours.
DEFAULT_APPROVAL_TTL_MS = 10 * 60_000
DEFAULT_THREAD_IDLE_TTL_MS = 24 * 3_600_000
_THREAD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# Registry keys: a caller's thread id, optionally behind its subject's namespace.
_THREAD_KEY = re.compile(r"[A-Za-z0-9._:-]{1,160}")
# An evicted thread's shared keys are deleted only when no replica used it since this one
# did; this much of the measured idle time is allowed for the store round trip.
_SHARED_IDLE_SLACK_MS = 250

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
    return f"{digest[:SUBJECT_DIGEST_CHARS]}.{thread_id}"


def _check_key(key: str) -> str:
    if not _THREAD_KEY.fullmatch(key):
        raise InvalidArgumentError("thread_id: must be 1-128 characters of [A-Za-z0-9._:-]")
    return key


class ReplicaBus(Protocol):
    """How a registry reaches the other replicas (store.redis_bus.RedisBus)."""

    def on_request(
        self, op: str, handler: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
    ) -> None:
        """Answer broadcast requests of kind `op`."""
        ...

    async def ask(self, op: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Broadcast a request; the answers of the replicas that held the object."""
        ...


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
        limits: StateLimits | None = None,
    ) -> None:
        self._threads: dict[str, ThreadState] = {}
        self._max_threads = max_threads
        self._limits = limits = limits or StateLimits()
        self.pending_tally, self.session_tally = limits.tallies()
        # At the router-wide bound, expired parked calls of every thread make room first.
        self.pending_tally.reclaim = lambda: [st.expire_pending() for st in self._threads.values()]
        self._session_factory = session_factory or (
            lambda _tid: SessionManager(
                max_processes=limits.max_sessions_per_thread, budget=self.session_tally
            )
        )
        self._clock = clock
        self._approval_ttl_ms = approval_ttl_ms
        self._idle_ttl_ms = idle_ttl_ms
        self.shared: SharedState = shared or InMemorySharedState(clock)
        self._environments = environments
        self._instance_id = instance_id or uuid.uuid4().hex
        self._bus: ReplicaBus | None = None

    def attach_bus(self, bus: ReplicaBus) -> None:
        """Route Interrupt and TerminateSession through `bus` to the replica holding them."""
        self._bus = bus
        bus.on_request("interrupt", self._bus_interrupt)
        bus.on_request("terminate_session", self._bus_terminate)

    async def interrupt(self, thread_id: str, call_id: str) -> None:
        """Interrupt an in-flight call on whichever replica runs it; none → NOT_FOUND."""
        state = await self.get(thread_id)
        if state.interrupt_local(call_id):
            return
        body = {"thread": thread_id, "call_id": call_id}
        if self._bus is not None and await self._bus.ask("interrupt", body):
            return
        raise UnknownCallError(f"no in-flight call {call_id}")

    async def terminate_session(self, thread_id: str, session_id: int) -> bool:
        """Kill a session (a local one on whichever replica holds it); whether it ran."""
        state = await self.get(thread_id)
        try:
            return await state.sessions.terminate(session_id)
        except UnknownSessionError:
            if self._bus is None:
                raise
            body = {"thread": thread_id, "session_id": session_id}
            held = await self._bus.ask("terminate_session", body)
            if not held:
                raise
            return bool(held[0].get("was_running"))

    async def _bus_interrupt(self, message: dict[str, Any]) -> dict[str, Any] | None:
        state = self._threads.get(str(message.get("thread")))
        if state is None or not state.interrupt_local(str(message.get("call_id"))):
            return None
        return {}

    async def _bus_terminate(self, message: dict[str, Any]) -> dict[str, Any] | None:
        state = self._threads.get(str(message.get("thread")))
        session_id = message.get("session_id")
        if state is None or not isinstance(session_id, int) or state.sessions.get(session_id) is None:
            return None
        return {"was_running": await state.sessions.terminate(session_id)}

    async def _make_room(self, thread_id: str) -> None:
        """At max_threads, end an idle thread for `thread_id`'s subject: one of its own
        first, another subject's only while that one holds more than its fair share
        (docs/limits.md); with none, RESOURCE_EXHAUSTED rather than killing live work."""
        subject = subject_of(thread_id)
        # A loop: another call may take the room freed while this one closed the victim.
        while len(self._threads) >= self._max_threads:
            victim = eviction_victim(self._threads.values(), subject, self._max_threads)
            if victim is None:
                share = fair_share(
                    self._max_threads, [*(subject_of(k) for k in self._threads), subject]
                )
                raise LimitExceededError(
                    f"thread limit reached: this router holds {len(self._threads)} threads "
                    f"(limits.max_threads = {self._max_threads}), none of this caller's is "
                    f"idle and no other caller's idle threads exceed its fair share of "
                    f"{share}; end threads with EndThread",
                    limit="limits.max_threads",
                )  # fmt: skip
            await self._close_here(victim)

    async def _close_here(self, state: ThreadState) -> None:
        """Close this router's part of a thread (evicted or idle past its TTL) and, when no
        router uses it any more, its shared keys (so the store holds only live threads)."""
        del self._threads[state.thread_id]
        await state.close_local()
        if not self.shared.distributed:
            await self.shared.drop_thread(state.thread_id)
            return
        idle_ms = int((self._clock() - state.last_used) * 1000) - _SHARED_IDLE_SLACK_MS
        with contextlib.suppress(SharedStateUnavailableError):
            if await self.shared.drop_idle_thread(state.thread_id, state.generation, idle_ms):
                return  # idle everywhere, nothing live: every key of it is gone
            if not await self.shared.thread_alive(state.thread_id):
                # Expired everywhere (Redis dropped its keys): nobody else will kill the
                # thread's daemon processes, and Redis expiry alone does not.
                await state.sessions.kill_known()

    async def _new(self, thread_id: str, generation: str) -> ThreadState:
        await self._make_room(thread_id)
        # No await from here on: the room made is this thread's.
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
            max_pending=self._limits.max_pending_per_thread,
            pending_tally=self.pending_tally,
        )
        self._threads[thread_id] = state
        return state

    async def _sync(self, thread_id: str, generation: str | None) -> ThreadState | None:
        """The local state matching the shared generation (a stale one is closed)."""
        state = self._threads.get(thread_id)
        if state is not None and generation is not None and state.provisional:
            state.generation, state.provisional = generation, False
        stale = state is not None and state.generation != generation
        if stale and await self.shared.check_reset():
            # Redis lost its data (restart without AOF): this replica re-published its threads.
            generation = await self.shared.thread_generation(thread_id)
        if state is not None and state.generation != generation:
            # Ended (or expired) through another router: forget what this router held. An
            # expired thread's daemon processes die here (an ended one's are gone already).
            del self._threads[thread_id]
            await state.close_local()
            if self.shared.distributed:
                await state.sessions.kill_known()
            state = None
        if state is None and generation is not None:
            state = await self._new(thread_id, generation)
        if state is not None:
            state.touch()
            with contextlib.suppress(SharedStateUnavailableError):
                await state.sessions.refresh()
        return state

    async def _degraded(self, thread_id: str) -> ThreadState:
        """This replica's part of the thread while the store is down (new ones provisional)."""
        state = self._threads.get(thread_id)
        if state is None:
            state = await self._new(thread_id, uuid.uuid4().hex)
            state.provisional = True
        state.touch()  # calls needing shared state answer UNAVAILABLE from the store itself
        state.sessions.mark_stale()
        return state

    async def publish_held(self) -> int:
        """After an outage: publish the sessions held here while the store was down."""
        return await store_recovery.publish_held(self._threads, self.shared)

    async def store_changed(self, up: bool) -> None:
        """The store monitor's listener: publish held sessions as soon as the store is back."""
        if not up:
            return
        try:
            held = await self.publish_held()
        except SharedStateUnavailableError:
            return  # down again: the next recovery (or sweep) publishes them
        if held:
            _log.info("published %d sessions kept while the shared state was down", held)

    async def republish(self) -> None:
        """After the store lost its data: re-create this replica's threads and sessions."""
        await store_recovery.republish(self._threads, self.shared)

    async def get_or_create(self, thread_id: str) -> ThreadState:
        """The thread, created on first use (any router); local-only while the store is down."""
        _check_key(thread_id)
        if (state := self._threads.get(thread_id)) is None:
            # Before the shared record exists, so a refusal leaves none (_new checks again).
            await self._make_room(thread_id)
        candidate = state.generation if state is not None and state.provisional else ""
        try:
            generation = await self.shared.ensure_thread(thread_id, candidate or uuid.uuid4().hex)
        except SharedStateUnavailableError:
            return await self._degraded(thread_id)
        synced = await self._sync(thread_id, generation)
        assert synced is not None
        return synced

    async def get(self, thread_id: str) -> ThreadState:
        """An existing thread; unknown → NOT_FOUND (this replica's part while the store is down)."""
        _check_key(thread_id)
        try:
            generation = await self.shared.thread_generation(thread_id)
        except SharedStateUnavailableError:
            if thread_id not in self._threads:
                raise
            return await self._degraded(thread_id)
        state = await self._sync(thread_id, generation)
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

        With a distributed store the shared keys go too only when no other router used the
        thread since (_close_here); otherwise they stay for it and expire with the same TTL.
        """
        now = self._clock()
        idle = [
            tid
            for tid, st in self._threads.items()
            if not st.inflight and now - st.last_used >= self._idle_ttl_ms / 1000
        ]
        for tid in idle:
            await self._close_here(self._threads[tid])
        return idle

    async def keep_sessions_alive(self) -> int:
        """Renew the daemon owner TTL of the shared sessions of threads still alive."""
        return await store_recovery.keep_sessions_alive(self._threads, self.shared)

    async def expire_pending(self) -> int:
        """Drop parked calls past their approval TTL (a Redis store expires them itself)."""
        if isinstance(self.shared, InMemorySharedState):
            return self.shared.purge_expired_pending()
        return 0

    async def aclose(self) -> None:
        """Close this router's part of every thread, then the shared store's connections."""
        threads, self._threads = list(self._threads.values()), {}
        for state in threads:
            await state.close_local()
            if not self.shared.distributed:
                await self.shared.drop_thread(state.thread_id)
        await self.shared.aclose()

    def environments_in_use(self) -> set[str]:
        """Environments that a session held by this router runs on (discovery keeps them)."""
        return {
            info.environment_id
            for state in self._threads.values()
            for info in state.sessions.sessions()
        }

    def __len__(self) -> int:
        return len(self._threads)

    def states(self) -> list[ThreadState]:
        """The threads this router holds now (a copy: read-only views such as the console)."""
        return list(self._threads.values())


# The name the router app uses; the default SharedState is in memory.
InMemoryThreadStore = ThreadRegistry
