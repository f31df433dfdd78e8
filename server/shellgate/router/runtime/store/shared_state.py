"""Thread state that several routers can share (spec 06 §2): one small store interface.

What lives here: the approval cache ("approved for session" digests), sticky grants,
pending-approval records and the unified-exec session table of *remote* sessions. The
in-memory implementation is the default (one router); `redis_state.RedisSharedState`
lets routers behind a load balancer serve the same thread. Live objects (local processes,
in-flight calls) stay in the router that owns them: a session on the embedded `local`
environment can only be polled through its own router (any other answers `write_stdin
failed: Unknown process id {id}`); Interrupt and TerminateSession reach the owner through
`redis_bus`. A parked call is stored as data (`parked_codec`) in its pending record, so any
router resumes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Protocol

__all__ = [
    "CallRecord",
    "InMemorySharedState",
    "PendingRecord",
    "SessionRecord",
    "SharedState",
]


@dataclass(frozen=True)
class SessionRecord:
    """A remote unified-exec session as any router can re-attach to it."""

    session_id: int
    environment_id: str
    backend_process_id: str
    call_id: str
    argv: tuple[str, ...]
    tty: bool
    sandboxed: bool
    started_at_ms: int
    last_used_at_ms: int
    # The daemon seq of the last output chunk returned to the model.
    consumed_seq: int
    # The router instance that started it (informational).
    instance_id: str = ""

    def to_json(self) -> str:
        """Compact JSON for the store."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionRecord:
        """The record back from the store."""
        data = json.loads(text)
        data["argv"] = tuple(data["argv"])
        return cls(**data)


@dataclass(frozen=True)
class PendingRecord:
    """A pending approval: the parked call's stored form (`payload`, parked_codec JSON)."""

    approval_id: str
    call_id: str
    # The router that parked it (informational: any router resumes it).
    instance_id: str
    payload: str = ""
    # What was left of its TTL when it was taken (kept when a wrong answer puts it back).
    ttl_ms: int = 0


@dataclass(frozen=True)
class CallRecord:
    """A call id's idempotency record (runtime/call_ledger.py): its item and how far it got."""

    # sha256 of the item's protobuf bytes: a retry must send the same item.
    digest: str
    # "running", "parked" (detail: the approval id) or "done" (detail: the completed event).
    state: str
    # The router that runs (or ran) it.
    instance_id: str
    detail: str = ""

    def to_json(self) -> str:
        """Compact JSON for the store."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> CallRecord:
        """The record back from the store."""
        return cls(**json.loads(text))


class SharedState(Protocol):
    """Per-thread shared state; every method may raise SharedStateUnavailableError."""

    @property
    def distributed(self) -> bool:
        """True when other routers may see this state (remote sessions are then published)."""
        ...

    async def ensure_thread(self, thread_id: str, generation: str) -> str:
        """Create the thread if absent (with `generation`), refresh its TTL; its generation."""
        ...

    async def thread_generation(self, thread_id: str) -> str | None:
        """The live thread's generation (refreshing its TTL), or None when it does not exist."""
        ...

    async def drop_thread(self, thread_id: str) -> tuple[list[SessionRecord], int]:
        """Delete everything of the thread; its remote sessions and pending count."""
        ...

    async def check_reset(self) -> bool:
        """Whether the store lost its data since last asked (its holders then re-publish)."""
        ...

    async def restore_thread(self, thread_id: str, generation: str) -> None:
        """Re-create a thread with a known generation (re-publication after a data loss)."""
        ...

    async def approve(self, thread_id: str, digest: str) -> None:
        """Record an "approved for session" approval key digest."""
        ...

    async def is_approved(self, thread_id: str, digest: str) -> bool:
        """Whether the digest was approved for the session."""
        ...

    async def set_grant(self, thread_id: str, key: str, value: str) -> None:
        """Store a sticky permission grant (opaque JSON text)."""
        ...

    async def grants(self, thread_id: str) -> dict[str, str]:
        """All sticky grants of the thread."""
        ...

    async def put_pending(self, thread_id: str, record: PendingRecord, ttl_ms: int) -> None:
        """Record a pending approval for `ttl_ms`."""
        ...

    async def take_pending(self, thread_id: str, approval_id: str) -> PendingRecord | None:
        """Delete and return a pending approval atomically; None when gone (expired, taken)."""
        ...

    async def live_pending_ids(self, thread_id: str) -> set[str]:
        """The ids of the thread's live pending approvals (any router's)."""
        ...

    async def reserve_session_id(self, thread_id: str, session_id: int) -> bool:
        """Claim a session id for the thread; False when another router holds it."""
        ...

    async def release_session_id(self, thread_id: str, session_id: int) -> None:
        """Give a session id back."""
        ...

    async def put_session(self, thread_id: str, record: SessionRecord) -> None:
        """Store (or update) a remote session."""
        ...

    async def put_session_if_absent(self, thread_id: str, record: SessionRecord) -> bool:
        """Store a remote session unless one with its id exists; whether it was stored."""
        ...

    async def get_session(self, thread_id: str, session_id: int) -> SessionRecord | None:
        """A remote session."""
        ...

    async def list_sessions(self, thread_id: str) -> list[SessionRecord]:
        """The thread's remote sessions by id."""
        ...

    async def delete_session(self, thread_id: str, session_id: int) -> bool:
        """Forget a remote session (and release its id); whether it existed."""
        ...

    async def claim_call(
        self, thread_id: str, key: str, record: CallRecord, ttl_ms: int
    ) -> CallRecord | None:
        """Store `record` under `key` unless a record is there; None when stored, else that one."""
        ...

    async def put_call(self, thread_id: str, key: str, record: CallRecord, ttl_ms: int) -> None:
        """Store (replace) a call record for `ttl_ms`."""
        ...

    async def drop_call(self, thread_id: str, key: str) -> None:
        """Forget a call record."""
        ...

    async def aclose(self) -> None:
        """Close connections."""
        ...


@dataclass
class _Thread:
    generation: str
    approved: set[str]
    grants: dict[str, str]
    pending: dict[str, tuple[PendingRecord, float]]
    ids: set[int]
    sessions: dict[int, SessionRecord]


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
            t = _Thread("", set(), {}, {}, set(), {})
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

    async def check_reset(self) -> bool:
        """Never: this memory lives as long as the router."""
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
