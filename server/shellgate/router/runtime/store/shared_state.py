"""Thread state that several routers can share (spec 06 §2): one small store interface.

What lives here: the approval cache ("approved for session" digests), sticky grants,
pending-approval records and the unified-exec session table of *remote* sessions. The
in-memory implementation (`memory_state`) is the default (one router); `redis_state.RedisSharedState`
lets routers behind a load balancer serve the same thread. Live objects (local processes,
in-flight calls) stay in the router that owns them: a session on the embedded `local`
environment can only be polled through its own router (any other answers `write_stdin
failed: Unknown process id {id}`); Interrupt and TerminateSession reach the owner through
`redis_bus`. A parked call is stored as data (`parked_codec`) in its pending record, so any
router resumes it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Protocol

__all__ = [
    "CallRecord",
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
    # The daemon output offset (bytes) through `consumed_seq`: bytes evicted past it are
    # counted as omitted on the next poll.
    consumed_offset: int = 0

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
    """A call id's idempotency record (runtime/call/ledger.py): its item and how far it got."""

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

    async def drop_idle_thread(self, thread_id: str, generation: str, idle_ms: int) -> bool:
        """Delete the thread (this generation) when no router used it for `idle_ms` and
        nothing of it is live anywhere; whether it was deleted (an evicted thread)."""
        ...

    async def check_reset(self) -> bool:
        """Whether the store lost its data since last asked (its holders then re-publish)."""
        ...

    async def restore_thread(self, thread_id: str, generation: str) -> None:
        """Re-create a thread with a known generation (re-publication after a data loss)."""
        ...

    def recovered_within(self, seconds: float) -> bool:
        """Whether the store came back from an outage less than `seconds` ago."""
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

    async def update_session(
        self, thread_id: str, record: SessionRecord, lease_token: str, expected_seq: int
    ) -> bool:
        """Store a polled session's new record only while `lease_token` holds its lease and
        the stored consumed_seq is still `expected_seq` (compare-and-set); whether it did."""
        ...

    async def acquire_lease(
        self, thread_id: str, session_id: int, token: str, ttl_ms: int
    ) -> bool:
        """Take the session's poll lease for `ttl_ms` unless another holder has it (or, in a
        shared store, an earlier waiter still retries: waiters are served in order)."""
        ...

    async def renew_lease(self, thread_id: str, session_id: int, token: str, ttl_ms: int) -> bool:
        """Extend a held lease; False when it is no longer ours."""
        ...

    async def release_lease(self, thread_id: str, session_id: int, token: str) -> None:
        """Give a held lease back (a lease taken over by another holder is left alone); a
        waiting token leaves the waiters' queue."""
        ...

    async def thread_alive(self, thread_id: str) -> bool:
        """Whether the thread exists, without refreshing its idle TTL."""
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
