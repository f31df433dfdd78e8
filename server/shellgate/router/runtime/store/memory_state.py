"""The in-memory SharedState: one router's threads in this process (the default store).

TTLs of threads are the thread registry's job; pending approvals, leases and call records
expire here by the clock given.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from shellgate.router.runtime.store.shared_state import CallRecord, PendingRecord, SessionRecord

__all__ = ["InMemorySharedState"]


@dataclass
class _Thread:
    generation: str
    approved: set[str]
    grants: dict[str, str]
    pending: dict[str, tuple[PendingRecord, float]]
    ids: set[int]
    sessions: dict[int, SessionRecord]
    leases: dict[int, tuple[str, float]]


class InMemorySharedState:
    """The default: this process's memory (one router); TTLs are the thread store's job."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, max_calls_per_thread: int = 1_000
    ) -> None:
        self._threads: dict[str, _Thread] = {}
        self._clock = clock
        # Call records per thread (insertion order = age), each with its expiry.
        self._calls: dict[str, dict[str, tuple[CallRecord, float]]] = {}
        self._max_calls = max_calls_per_thread

    @property
    def distributed(self) -> bool:
        """Never: a single router keeps its remote streams open."""
        return False

    def _t(self, thread_id: str) -> _Thread:
        t = self._threads.get(thread_id)
        if t is None:
            t = _Thread("", set(), {}, {}, set(), {}, {})
            self._threads[thread_id] = t
        return t

    async def ensure_thread(self, thread_id: str, generation: str) -> str:
        """Create if absent; the generation."""
        t = self._t(thread_id)
        if not t.generation:
            t.generation = generation
        return t.generation

    async def thread_generation(self, thread_id: str) -> str | None:
        """The generation, or None."""
        t = self._threads.get(thread_id)
        return t.generation if t is not None and t.generation else None

    async def drop_thread(self, thread_id: str) -> tuple[list[SessionRecord], int]:
        """Delete everything of the thread."""
        self._calls.pop(thread_id, None)
        t = self._threads.pop(thread_id, None)
        if t is None:
            return [], 0
        now = self._clock()
        live = sum(1 for _, exp in t.pending.values() if exp > now)
        return sorted(t.sessions.values(), key=lambda r: r.session_id), live

    async def drop_idle_thread(self, thread_id: str, generation: str, idle_ms: int) -> bool:
        """Delete the thread (one router: its registry knows it is idle)."""
        t = self._threads.get(thread_id)
        if t is not None and t.generation not in ("", generation):
            return False
        await self.drop_thread(thread_id)
        return True

    async def check_reset(self) -> bool:
        """Never: this memory lives as long as the router."""
        return False

    def recovered_within(self, seconds: float) -> bool:
        """Never: this memory is never down."""
        return False

    async def restore_thread(self, thread_id: str, generation: str) -> None:
        """Set the generation."""
        self._t(thread_id).generation = generation

    async def approve(self, thread_id: str, digest: str) -> None:
        """Record an approval."""
        self._t(thread_id).approved.add(digest)

    async def is_approved(self, thread_id: str, digest: str) -> bool:
        """Whether approved."""
        t = self._threads.get(thread_id)
        return t is not None and digest in t.approved

    async def set_grant(self, thread_id: str, key: str, value: str) -> None:
        """Store a grant."""
        self._t(thread_id).grants[key] = value

    async def grants(self, thread_id: str) -> dict[str, str]:
        """All grants."""
        t = self._threads.get(thread_id)
        return dict(t.grants) if t is not None else {}

    async def put_pending(self, thread_id: str, record: PendingRecord, ttl_ms: int) -> None:
        """Record a pending approval."""
        self._t(thread_id).pending[record.approval_id] = (record, self._clock() + ttl_ms / 1000)

    async def take_pending(self, thread_id: str, approval_id: str) -> PendingRecord | None:
        """Delete and return a live pending approval."""
        t = self._threads.get(thread_id)
        entry = t.pending.pop(approval_id, None) if t is not None else None
        now = self._clock()
        if entry is None or entry[1] <= now:
            return None
        return replace(entry[0], ttl_ms=int((entry[1] - now) * 1000))

    async def live_pending_ids(self, thread_id: str) -> set[str]:
        """Live pending approval ids."""
        t = self._threads.get(thread_id)
        now = self._clock()
        return set() if t is None else {a for a, (_, exp) in t.pending.items() if exp > now}

    def purge_expired_pending(self) -> int:
        """Forget parked calls past their TTL (the sweeper's job here; Redis expires its own)."""
        now = self._clock()
        dropped = 0
        for t in self._threads.values():
            for aid in [a for a, (_, exp) in t.pending.items() if exp <= now]:
                del t.pending[aid]
                dropped += 1
        return dropped

    async def reserve_session_id(self, thread_id: str, session_id: int) -> bool:
        """Claim an id."""
        ids = self._t(thread_id).ids
        if session_id in ids:
            return False
        ids.add(session_id)
        return True

    async def release_session_id(self, thread_id: str, session_id: int) -> None:
        """Release an id."""
        t = self._threads.get(thread_id)
        if t is not None:
            t.ids.discard(session_id)

    async def put_session(self, thread_id: str, record: SessionRecord) -> None:
        """Store a session."""
        t = self._t(thread_id)
        t.ids.add(record.session_id)
        t.sessions[record.session_id] = record

    async def put_session_if_absent(self, thread_id: str, record: SessionRecord) -> bool:
        """Store a session unless present."""
        t = self._t(thread_id)
        if record.session_id in t.sessions:
            return False
        await self.put_session(thread_id, record)
        return True

    async def get_session(self, thread_id: str, session_id: int) -> SessionRecord | None:
        """A session."""
        t = self._threads.get(thread_id)
        return t.sessions.get(session_id) if t is not None else None

    async def list_sessions(self, thread_id: str) -> list[SessionRecord]:
        """Sessions by id."""
        t = self._threads.get(thread_id)
        return [] if t is None else [t.sessions[k] for k in sorted(t.sessions)]

    async def delete_session(self, thread_id: str, session_id: int) -> bool:
        """Forget a session."""
        t = self._threads.get(thread_id)
        if t is None:
            return False
        t.ids.discard(session_id)
        return t.sessions.pop(session_id, None) is not None

    async def update_session(
        self, thread_id: str, record: SessionRecord, lease_token: str, expected_seq: int
    ) -> bool:
        """Compare-and-set under the lease."""
        t = self._threads.get(thread_id)
        if t is None or not self._holds(t, record.session_id, lease_token):
            return False
        current = t.sessions.get(record.session_id)
        if current is None or current.consumed_seq != expected_seq:
            return False
        t.sessions[record.session_id] = record
        return True

    def _holds(self, t: _Thread, session_id: int, token: str) -> bool:
        lease = t.leases.get(session_id)
        return lease is not None and lease[0] == token and lease[1] > self._clock()

    async def acquire_lease(
        self, thread_id: str, session_id: int, token: str, ttl_ms: int
    ) -> bool:
        """Take the lease when free (or expired)."""
        t = self._t(thread_id)
        lease = t.leases.get(session_id)
        if lease is not None and lease[1] > self._clock():
            return False
        t.leases[session_id] = (token, self._clock() + ttl_ms / 1000)
        return True

    async def renew_lease(self, thread_id: str, session_id: int, token: str, ttl_ms: int) -> bool:
        """Extend a held lease."""
        t = self._threads.get(thread_id)
        if t is None or not self._holds(t, session_id, token):
            return False
        t.leases[session_id] = (token, self._clock() + ttl_ms / 1000)
        return True

    async def release_lease(self, thread_id: str, session_id: int, token: str) -> None:
        """Give a held lease back."""
        t = self._threads.get(thread_id)
        if t is not None and self._holds(t, session_id, token):
            del t.leases[session_id]

    async def thread_alive(self, thread_id: str) -> bool:
        """Whether the thread exists."""
        t = self._threads.get(thread_id)
        return t is not None and bool(t.generation)

    def _live_call(self, thread_id: str, key: str) -> CallRecord | None:
        calls = self._calls.get(thread_id, {})
        entry = calls.get(key)
        if entry is not None and entry[1] <= self._clock():
            del calls[key]
            return None
        return entry[0] if entry is not None else None

    async def claim_call(
        self, thread_id: str, key: str, record: CallRecord, ttl_ms: int
    ) -> CallRecord | None:
        """Store unless present; the present record otherwise."""
        existing = self._live_call(thread_id, key)
        if existing is not None:
            return existing
        await self.put_call(thread_id, key, record, ttl_ms)
        return None

    async def put_call(self, thread_id: str, key: str, record: CallRecord, ttl_ms: int) -> None:
        """Store a record; past the per-thread bound the oldest records go first."""
        calls = self._calls.setdefault(thread_id, {})
        calls.pop(key, None)
        calls[key] = (record, self._clock() + ttl_ms / 1000)
        while len(calls) > self._max_calls:
            del calls[next(iter(calls))]

    async def drop_call(self, thread_id: str, key: str) -> None:
        """Forget a record."""
        self._calls.get(thread_id, {}).pop(key, None)

    async def aclose(self) -> None:
        """Nothing to close."""
