"""Remote unified-exec sessions shared between routers: publish, re-attach, terminate.

A remote session lives on its daemon as a detached process; the shared store keeps its
daemon process id and the seq (and output offset) of the last output returned to the model
(`shared_records.py`). Any router can then poll it by re-attaching (ExecService.Attach from
that seq) under the session's lease (`session_lease.py`), write to it and kill it; output
the daemon evicted meanwhile is counted as omitted from the offsets. `SharedSessions` is
the `SessionSharing` strategy of a thread whose store is distributed (session_sharing.py).

While the store is down a new remote session cannot be published: its polls are answered
from this router's table as usual, and it is *held* there until the store is back, when
`publish_held` stores its record (the store monitor's recovery, and every sweep). A poll
whose position cannot be stored is held the same way, with its lease: from the record's
older position the daemon would hand that poll's output to the next poll again. Another
replica asked for an id it cannot find just after an outage waits up to
`REPUBLISH_GRACE_S` for that publication; while its own view of the store is stale, an id
it does not know may still be shared, so the poll goes on to the store (UNAVAILABLE while
it is down) instead of answering `Unknown process id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Container, Sequence
from contextlib import AbstractAsyncContextManager

from shellgate.common.errors import SharedStateUnavailableError, UnknownSessionError
from shellgate.router.runtime.store.shared_state import SessionRecord, SharedState
from shellgate.router.runtime.threads.session_lease import LEASE_TTL_MS, SessionLease
from shellgate.router.runtime.threads.session_sharing import SessionTable
from shellgate.router.runtime.threads.shared_records import (
    SessionEnvironments,
    SessionInfo,
    reattach,
    record_of,
    remote_env,
    session_status,
    shared_session_info,
    terminate_records,
)
from shellgate.router.runtime.threads.unified_process import UnifiedProcess

__all__ = ["REPUBLISH_GRACE_S", "SharedSessions"]

_log = logging.getLogger(__name__)
# How long after the store returns an absent session record is looked for again: the
# replica holding the session publishes it within about one store probe (1 s) of the end
# of the outage.
REPUBLISH_GRACE_S = 3.0
_REPUBLISH_POLL_S = 0.1


class SharedSessions:
    """The sessions of one thread as replicas sharing a store see them."""

    def __init__(
        self,
        shared: SharedState,
        thread_id: str,
        environments: SessionEnvironments | None,
        instance_id: str,
        clock: Callable[[], float],
    ) -> None:
        self._shared = shared
        self._thread_id = thread_id
        self._environments = environments
        self._instance_id = instance_id
        self._clock = clock
        self._shared_ids: set[int] = set()
        # The thread's shared records as this replica last read or wrote them: re-published
        # when the store lost its data (a Redis restart without AOF), so their processes stay
        # owned, and killed when the thread expires.
        self._known: dict[int, SessionRecord] = {}
        # Shared sessions re-attached for the request polling them (never stored here).
        self._attached: dict[int, UnifiedProcess] = {}
        # Poll leases this router holds (re-attached sessions and first yields).
        self._leases: dict[int, SessionLease] = {}
        # Local processes already published before their first yield ended.
        self._published: set[int] = set()
        # Remote sessions kept in this router's table because the store was down when their
        # yield ended: published when it is back (publish_held).
        self._held: dict[int, UnifiedProcess] = {}
        # Records of reported exits the store was down to delete: deleted when it is back.
        self._ended_unstored: set[int] = set()
        # Whether the last look at the thread's shared records got an answer.
        self._fresh = False

    @property
    def distributed(self) -> bool:
        """Always."""
        return True

    # --- ids ---------------------------------------------------------------------------

    def knows(self, process_id: int) -> bool:
        """Whether the id is a shared session's (as of the last refresh)."""
        return process_id in self._shared_ids

    def may_exist(self, process_id: int) -> bool:
        """Whether a poll of the id must ask the store: a known shared id, or any id while
        the last look at the store failed or just after the store came back."""
        # Just after an outage the store may not hold yet what a replica started during it
        # (it publishes within about a probe): such an id is looked for, not unknown.
        return (process_id in self._shared_ids or not self._fresh
                or self._shared.recovered_within(REPUBLISH_GRACE_S))  # fmt: skip

    def mark_stale(self) -> None:
        """The store could not be read for this request: what was last seen may be old."""
        self._fresh = False

    @property
    def holding(self) -> bool:
        """Whether sessions wait here for the store to publish them."""
        return bool(self._held or self._ended_unstored)

    async def claim_id(self, process_id: int) -> bool:
        """Claim the id in the store; False when another router's session has it."""
        try:
            return await self._shared.reserve_session_id(self._thread_id, process_id)
        except SharedStateUnavailableError:
            # Store down: unique here and among the shared ids last seen (a local
            # session needs no more; a remote one fails publishing it, UNAVAILABLE).
            return True

    async def release_id(self, process_id: int) -> None:
        """Give the id back in the store."""
        await self._shared.release_session_id(self._thread_id, process_id)

    # --- the thread's shared records -----------------------------------------------------

    async def refresh(self) -> None:
        """Re-read which shared sessions exist (the manager's sync `exists` answers from it)."""
        try:
            records = await self._shared.list_sessions(self._thread_id)
        except SharedStateUnavailableError:
            self._fresh = False
            raise
        self._fresh = True
        self._known = {r.session_id: r for r in records}
        self._shared_ids = set(self._known)

    async def republish(self) -> None:
        """Store the shared records this replica knows again, each only when absent."""
        for record in list(self._known.values()):
            await self._shared.put_session_if_absent(self._thread_id, record)

    async def publish_held(self, table: SessionTable) -> int:
        """Publish the sessions held here while the store was down; how many were."""
        for pid in list(self._ended_unstored):
            await self._shared.delete_session(self._thread_id, pid)
            self._ended_unstored.discard(pid)
        count = 0
        for pid, proc in list(self._held.items()):
            if table.get(pid) is not proc:
                # Pruned or ended here meanwhile: nothing is left to publish.
                self._held.pop(pid, None)
                if (lease := self._leases.pop(pid, None)) is not None:
                    await lease.release()
                continue
            if proc.listener is not None:
                continue  # a poll here is answering from it: its settle stores the record
            # Out of the table before any await: a poll arriving meanwhile must not answer
            # from an object about to be released; it waits for the lease (or the record)
            # and re-attaches instead.
            table.untrack(pid)
            self._attached[pid] = proc
            if pid in self._leases:
                # As the settle the outage refused: the position stored under the session's
                # lease, then the session handed over to the store.
                await self.settle(proc, table)
            elif (record := await self._unclaimed(pid, proc)) is not None:
                # Never published: stored now (once: a poll may go on from it at once).
                await self._hand_over(proc, True, record, table)
            else:
                del self._attached[pid]
                table.track(proc)  # stays on this replica
                continue
            count += 1
        return count

    async def _unclaimed(self, pid: int, proc: UnifiedProcess) -> SessionRecord | None:
        """Store a session never published (no lease) unless another one has its id; the
        record stored then, else None."""
        record = record_of(proc, self._instance_id)
        if await self._shared.put_session_if_absent(self._thread_id, record):
            return record
        # A poll here stored it meanwhile, or another replica drew the same id while
        # neither could claim it (then the model's polls reach that one).
        found = await self._shared.get_session(self._thread_id, pid)
        if found is not None and found.backend_process_id == record.backend_process_id:
            return found
        _log.warning("session %d: its id was taken by another replica's session "
                     "while the store was down; it stays on this replica", pid)  # fmt: skip
        self._held.pop(pid, None)
        return None

    async def keep_alive(self) -> int:
        """Renew the daemon owner TTL of the thread's shared sessions; how many there are.

        Called while the thread lives (the sweeper), so a session idle on its daemon dies
        only with its thread, never at the daemon's owner TTL alone.
        """
        records = await self._shared.list_sessions(self._thread_id)
        self._known = {r.session_id: r for r in records}
        await asyncio.gather(*(session_status(r, self._environments) for r in records))
        return len(records)

    async def kill_known(self) -> int:
        """Kill the shared sessions last seen (the thread expired); how many."""
        records, self._known = list(self._known.values()), {}
        return await terminate_records(records, self._environments)

    async def list_sessions(self, exclude: Container[int]) -> list[SessionInfo]:
        """The thread's shared sessions not in `exclude`, their state asked of the daemon."""
        records = [
            r for r in await self._shared.list_sessions(self._thread_id)
            if r.session_id not in exclude
        ]  # fmt: skip
        return list(
            await asyncio.gather(*(shared_session_info(r, self._environments) for r in records))
        )

    # --- polls ---------------------------------------------------------------------------

    async def open(self, process_id: int, wait_s: float) -> UnifiedProcess | None:
        """A shared session re-attached for this request, polled under its lease.

        A concurrent poll (any router) is waited for up to `wait_s`, then SessionBusyError.
        An unreachable daemon raises EnvironmentUnavailableError. The request ends with
        `settle` (or `ended` once the exit was reported), which releases the lease.
        """
        lease = await SessionLease.acquire(self._shared, self._thread_id, process_id, wait_s)
        proc: UnifiedProcess | None = None
        try:
            record = await self._shared.get_session(self._thread_id, process_id)
            if record is None and self._shared.recovered_within(REPUBLISH_GRACE_S):
                record = await self._await_republished(process_id)
            if record is None:
                self._shared_ids.discard(process_id)
                self._known.pop(process_id, None)
            else:
                self._known[process_id] = record
                proc = await reattach(record, self._environments, self._clock)
        except BaseException:
            await lease.release()
            raise
        if proc is None or record is None:
            await lease.release()
            return None
        lease.expected_seq = record.consumed_seq
        self._leases[process_id] = lease
        self._attached[process_id] = proc
        return proc

    async def _await_republished(self, process_id: int) -> SessionRecord | None:
        while self._shared.recovered_within(REPUBLISH_GRACE_S):
            await asyncio.sleep(_REPUBLISH_POLL_S)
            record = await self._shared.get_session(self._thread_id, process_id)
            if record is not None:
                return record
        return None

    async def publish_started(self, proc: UnifiedProcess) -> None:
        """Register a new remote session in the shared store before its first yield, under
        its lease, so a router dying mid-yield leaves a session others can poll and kill."""
        if remote_env(self._environments, proc.meta.environment_id) is None:
            return
        pid = proc.process_id
        lease: SessionLease | None = None
        try:
            # A fresh id's lease is free (an old one's expires within the lease TTL).
            lease = await SessionLease.acquire(
                self._shared, self._thread_id, pid, LEASE_TTL_MS / 1000
            )
            await self._shared.put_session(self._thread_id, record_of(proc, self._instance_id))
        except Exception as exc:
            # Best effort: then it is published when the first yield ends, as before. The
            # store being down is its monitor's to log (once per outage), not a traceback.
            down = isinstance(exc, SharedStateUnavailableError)
            _log.log(logging.DEBUG if down else logging.WARNING,
                     "session %d not published before its first yield", pid,
                     exc_info=not down)  # fmt: skip
            if lease is not None:
                await lease.release()
            return
        self._leases[pid] = lease
        self._published.add(pid)
        self._shared_ids.add(pid)

    def published(self, process_id: int) -> bool:
        """Whether a stored session was published before its first yield ended."""
        return process_id in self._published

    async def settle(self, proc: UnifiedProcess, table: SessionTable) -> None:
        """After a response: publish a live remote session, or update its record."""
        pid = proc.process_id
        attached = self._attached.get(pid) is proc
        stored = table.get(pid) is proc
        lease = self._leases.pop(pid, None) if attached or stored else None
        kept = False
        try:
            kept = await self._settle(proc, attached, stored, lease, table)
        finally:
            if lease is not None and not kept:
                await lease.release()

    async def _settle(
        self,
        proc: UnifiedProcess,
        attached: bool,
        stored: bool,
        lease: SessionLease | None,
        table: SessionTable,
    ) -> bool:
        """Store the session's position and hand it over; True when held here (the store
        is down), `lease` then kept with it."""
        pid = proc.process_id
        # An exit seen but not reported (an interrupted poll): the record stays for a
        # re-poll, with this answer's position like any other.
        published = stored and (pid in self._published or pid in self._held)
        if proc.exited and not (attached or published):
            return False
        remote = remote_env(self._environments, proc.meta.environment_id) is not None
        if not attached and not (stored and remote):
            return False
        record = record_of(proc, self._instance_id)
        try:
            if lease is None:
                await self._shared.put_session(self._thread_id, record)
            elif not await self._shared.update_session(
                self._thread_id, record, lease.token, lease.expected_seq
            ):
                # The lease expired and another poll went on, or the thread ended: this
                # poll's position is stale, and storing it would replay or skip output.
                _log.warning("session %d: consumed seq not stored (lease lost or ended)", pid)
        except SharedStateUnavailableError:
            # The store is down (its monitor logs the outage). The answer stands, but the
            # record still names the seq this poll started from, and the daemon hands a
            # drain nobody acknowledged to the next poll: one from that record would repeat
            # this answer. So the session stays in this router's table, polled here, with
            # its lease (another replica's poll waits) until `publish_held` stores it.
            if attached:
                del self._attached[pid]
                table.track(proc)
            self._held[pid] = proc
            if lease is not None:
                self._leases[pid] = lease
            return True
        await self._hand_over(proc, attached, record, table)
        return False

    async def _hand_over(
        self, proc: UnifiedProcess, attached: bool, record: SessionRecord, table: SessionTable
    ) -> None:
        """The session's record is stored: this router lets go of the process."""
        pid = proc.process_id
        self._held.pop(pid, None)
        self._shared_ids.add(pid)
        self._known[pid] = record
        if attached:
            del self._attached[pid]
        else:
            table.untrack(pid)
        self._published.discard(pid)
        # The daemon keeps the detached process; the next poll (any router) re-attaches.
        table.release_id(pid)
        await proc.release()

    # --- ends ----------------------------------------------------------------------------

    def leased(self, process_id: int) -> AbstractAsyncContextManager[None]:
        """Hold the session's poll lease (if this router holds one) until the block ends."""
        # Taken now, not when the block is entered: the caller owns it from this call on.
        return self._holding(self._leases.pop(process_id, None))

    @contextlib.asynccontextmanager
    async def _holding(self, lease: SessionLease | None) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if lease is not None:
                await lease.release()

    def detach(self, proc: UnifiedProcess) -> bool:
        """Drop `proc` if it was re-attached for this request; whether it was."""
        if self._attached.get(proc.process_id) is not proc:
            return False
        del self._attached[proc.process_id]
        return True

    async def ended(self, process_id: int, attached: bool) -> None:
        """An exit was reported: a re-attached or published session's record goes."""
        self._held.pop(process_id, None)
        if attached or process_id in self._published:
            self._published.discard(process_id)
            try:
                await self._shared.delete_session(self._thread_id, process_id)
            except SharedStateUnavailableError:
                # The exit was reported with its last output: that answer must not be lost
                # to the store being down. The record goes when the store is back (a poll
                # meanwhile finds the exit again, with no output).
                self._ended_unstored.add(process_id)
            self._shared_ids.discard(process_id)
            self._known.pop(process_id, None)

    async def terminated(self, process_id: int) -> None:
        """A stored session was killed: its published record and its claimed id go."""
        self._held.pop(process_id, None)
        if (lease := self._leases.pop(process_id, None)) is not None:
            await lease.release()
        if process_id in self._published:
            self._published.discard(process_id)
            await self._shared.delete_session(self._thread_id, process_id)
        await self._shared.release_session_id(self._thread_id, process_id)

    async def terminate(self, process_id: int) -> bool:
        """Kill a shared session through its daemon; unknown → UnknownSessionError."""
        record = await self._shared.get_session(self._thread_id, process_id)
        if record is None:
            raise UnknownSessionError(f"unknown session {process_id}")
        env = remote_env(self._environments, record.environment_id)
        running = False
        if env is not None:
            # Unreachable daemon: EnvironmentUnavailableError; the record stays.
            running = await env.terminate_process(record.backend_process_id)
        await self._shared.delete_session(self._thread_id, process_id)
        self._shared_ids.discard(process_id)
        self._known.pop(process_id, None)
        return running

    def drop_first_yields(self, process_ids: Sequence[int]) -> list[SessionLease]:
        """Forget every first-yield publication; these sessions' leases, to release."""
        leases = [self._leases.pop(pid) for pid in process_ids if pid in self._leases]
        self._published.clear()
        self._held.clear()
        return leases
