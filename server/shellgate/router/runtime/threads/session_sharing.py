"""How a thread's unified-exec sessions are shared: not at all, or between replicas.

`SessionManager` (sessions.py) holds this router's processes and runs every session flow
once; its `SessionSharing` strategy, chosen once when the thread is bound to its store,
adds at named points what replicas sharing that store need. `LocalSessions` is the single
router's: sessions live in memory and every hook does nothing. `SharedSessions`
(shared_sessions.py) claims ids across routers, publishes remote sessions before and after
each yield, and polls another router's sessions under their lease.
"""

from __future__ import annotations

import contextlib
from collections.abc import Container, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from shellgate.common.errors import UnknownSessionError
from shellgate.router.runtime.threads.session_lease import SessionLease
from shellgate.router.runtime.threads.shared_records import SessionInfo
from shellgate.router.runtime.threads.unified_process import UnifiedProcess

__all__ = ["LocalSessions", "SessionSharing", "SessionTable"]


class SessionTable(Protocol):
    """The sessions a manager stores, as a strategy hands one over to the shared store."""

    def get(self, process_id: int) -> UnifiedProcess | None:
        """A stored process."""
        ...

    def untrack(self, process_id: int) -> None:
        """Stop storing a process that lives on elsewhere (its id stays reserved)."""
        ...

    def track(self, proc: UnifiedProcess) -> None:
        """Store a re-attached process the shared store could not take back (no pruning)."""
        ...

    def release_id(self, process_id: int) -> None:
        """Release a reserved id."""
        ...


class SessionSharing(Protocol):
    """What a SessionManager does beyond its own processes; one instance per thread."""

    @property
    def distributed(self) -> bool:
        """Whether remote sessions are published for other routers."""
        ...

    def knows(self, process_id: int) -> bool:
        """Whether the id is a shared session's (as of the last refresh)."""
        ...

    def may_exist(self, process_id: int) -> bool:
        """Whether a poll of an id not stored here must ask the shared store."""
        ...

    def mark_stale(self) -> None:
        """The shared store could not be read: what was last seen may be old."""
        ...

    @property
    def holding(self) -> bool:
        """Whether sessions wait here for the shared store to publish them."""
        ...

    async def publish_held(self, table: SessionTable) -> int:
        """Publish the sessions held here while the store was down; how many were."""
        ...

    async def claim_id(self, process_id: int) -> bool:
        """Claim a freshly reserved id across routers; False when another holds it."""
        ...

    async def release_id(self, process_id: int) -> None:
        """Give a claimed id back."""
        ...

    async def refresh(self) -> None:
        """Re-read which shared sessions exist."""
        ...

    async def republish(self) -> None:
        """Store the shared records known here again, each only when absent."""
        ...

    async def keep_alive(self) -> int:
        """Renew the daemon owner TTL of the shared sessions; how many there are."""
        ...

    async def kill_known(self) -> int:
        """Kill the shared sessions last seen; how many."""
        ...

    async def open(self, process_id: int, wait_s: float) -> UnifiedProcess | None:
        """A shared session not stored here, re-attached for this request, or None."""
        ...

    async def publish_started(self, proc: UnifiedProcess) -> None:
        """Register a new session before its first yield, when it can be shared."""
        ...

    def published(self, process_id: int) -> bool:
        """Whether a stored session was published before its first yield ended."""
        ...

    async def settle(self, proc: UnifiedProcess, table: SessionTable) -> None:
        """After a response: hand a live remote session to the store, or update it."""
        ...

    async def list_sessions(self, exclude: Container[int]) -> list[SessionInfo]:
        """The shared sessions whose ids are not in `exclude`, their state asked now."""
        ...

    def leased(self, process_id: int) -> AbstractAsyncContextManager[None]:
        """Hold the session's poll lease (if this router holds one) until the block ends."""
        ...

    def detach(self, proc: UnifiedProcess) -> bool:
        """Drop `proc` if it was re-attached for this request; whether it was."""
        ...

    async def ended(self, process_id: int, attached: bool) -> None:
        """A session whose exit was reported: its shared record goes."""
        ...

    async def terminated(self, process_id: int) -> None:
        """A stored session was killed (TerminateSession): its shared record and id go."""
        ...

    async def terminate(self, process_id: int) -> bool:
        """Kill a session not stored here; unknown → UnknownSessionError; whether it ran."""
        ...

    def drop_first_yields(self, process_ids: Sequence[int]) -> list[SessionLease]:
        """Forget these sessions' first-yield publications; the leases to release."""
        ...


class LocalSessions:
    """One router, sessions in memory: nothing is shared, so every hook does nothing."""

    @property
    def distributed(self) -> bool:
        """Never."""
        return False

    def knows(self, process_id: int) -> bool:
        """No shared sessions."""
        return False

    def may_exist(self, process_id: int) -> bool:
        """Only stored sessions exist."""
        return False

    def mark_stale(self) -> None:
        """Nothing is seen from elsewhere."""

    @property
    def holding(self) -> bool:
        """Nothing waits for a store."""
        return False

    async def publish_held(self, table: SessionTable) -> int:
        """Nothing is published."""
        return 0

    async def claim_id(self, process_id: int) -> bool:
        """Unique here is unique enough."""
        return True

    async def release_id(self, process_id: int) -> None:
        """Nothing was claimed elsewhere."""

    async def refresh(self) -> None:
        """Nothing to re-read."""

    async def republish(self) -> None:
        """Nothing was published."""

    async def keep_alive(self) -> int:
        """No shared sessions to keep."""
        return 0

    async def kill_known(self) -> int:
        """No shared sessions to kill."""
        return 0

    async def open(self, process_id: int, wait_s: float) -> UnifiedProcess | None:
        """Only stored sessions exist."""
        return None

    async def publish_started(self, proc: UnifiedProcess) -> None:
        """Nothing is published."""

    def published(self, process_id: int) -> bool:
        """Nothing is published."""
        return False

    async def settle(self, proc: UnifiedProcess, table: SessionTable) -> None:
        """A stored session stays stored."""

    async def list_sessions(self, exclude: Container[int]) -> list[SessionInfo]:
        """No shared sessions."""
        return []

    def leased(self, process_id: int) -> AbstractAsyncContextManager[None]:
        """No leases."""
        return contextlib.nullcontext()

    def detach(self, proc: UnifiedProcess) -> bool:
        """Nothing is re-attached."""
        return False

    async def ended(self, process_id: int, attached: bool) -> None:
        """No shared record."""

    async def terminated(self, process_id: int) -> None:
        """No shared record."""

    async def terminate(self, process_id: int) -> bool:
        """Every session is stored here: this one is unknown."""
        raise UnknownSessionError(f"unknown session {process_id}")

    def drop_first_yields(self, process_ids: Sequence[int]) -> list[SessionLease]:
        """No leases."""
        return []
