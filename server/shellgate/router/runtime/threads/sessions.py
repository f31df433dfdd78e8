"""Unified-exec sessions of one thread: ids, storage and pruning (spec 05 §3.5)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable

from shellgate.common.errors import SharedStateUnavailableError, UnknownSessionError
from shellgate.common.tasks import TaskSet
from shellgate.router.output.unified_rules import (
    MAX_UNIFIED_EXEC_PROCESSES,
    PROTECTED_RECENT_PROCESSES,
    ProcessUsage,
    allocate_process_id,
    process_id_to_prune,
    process_limit_warning,
)
from shellgate.router.runtime.store.shared_state import SessionRecord, SharedState
from shellgate.router.runtime.threads.session_lease import LEASE_TTL_MS, SessionLease
from shellgate.router.runtime.threads.shared_sessions import (
    SessionEnvironments,
    SessionInfo,
    reattach,
    record_of,
    remote_env,
    session_status,
    shared_session_info,
    terminate_records,
)
from shellgate.router.runtime.threads.tally import CountedSet, Tally
from shellgate.router.runtime.threads.unified_process import UnifiedProcess

__all__ = ["SessionInfo", "SessionManager"]

_log = logging.getLogger(__name__)


class SessionManager:
    """The unified-exec processes of one thread; they outlive requests and turns."""

    def __init__(
        self,
        *,
        deterministic_ids: bool = False,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_processes: int = MAX_UNIFIED_EXEC_PROCESSES,
        budget: Tally | None = None,
    ) -> None:
        self._deterministic = deterministic_ids
        self._rng = rng or random.Random()
        self.clock = clock
        self._max = max_processes
        # Reserved ids are live or starting sessions; `budget` counts them over all threads
        # (limits.max_unified_sessions).
        self._budget = budget
        self._reserved: set[int] = CountedSet(budget) if budget is not None else set()
        self._procs: dict[int, UnifiedProcess] = {}
        # Sessions whose environment was lost: later writes get the lost text, not "unknown".
        self._lost: dict[int, str] = {}
        # Pruned processes being terminated in the background (owned here, joined by
        # terminate_all; a failure is logged).
        self._reaping = TaskSet(_log)
        # Shared (distributed) remote sessions: the store, and what this request re-attached.
        self._thread_id = ""
        self._shared: SharedState | None = None
        self._environments: SessionEnvironments | None = None
        self._instance_id = ""
        self._shared_ids: set[int] = set()
        # The thread's shared records as this replica last read or wrote them: re-published
        # when the store lost its data (a Redis restart without AOF), so their processes stay
        # owned, and killed when the thread expires.
        self._known: dict[int, SessionRecord] = {}
        self._attached: dict[int, UnifiedProcess] = {}
        # Poll leases this router holds (re-attached sessions and first yields).
        self._leases: dict[int, SessionLease] = {}
        # Local processes already published before their first yield ended.
        self._published: set[int] = set()

    def bind(
        self,
        thread_id: str,
        shared: SharedState,
        environments: SessionEnvironments | None,
        instance_id: str,
    ) -> None:
        """Attach the thread's shared store (remote sessions go there when distributed)."""
        self._thread_id = thread_id
        self._shared = shared
        self._environments = environments
        self._instance_id = instance_id

    @property
    def distributed(self) -> bool:
        """Whether remote sessions are published for other routers."""
        return self._shared is not None and self._shared.distributed

    # --- ids ---------------------------------------------------------------------------

    def reserve_id(self) -> int:
        """Reserve a fresh process id (random in [1000, 100000), or sequential in tests)."""
        pid = allocate_process_id(
            self._reserved, deterministic=self._deterministic, randint=self._rng.randrange
        )
        self._reserved.add(pid)
        return pid

    def release_id(self, process_id: int) -> None:
        """Release a reserved id (failure paths, exit, pruning)."""
        self._reserved.discard(process_id)

    def check_room(self) -> None:
        """RESOURCE_EXHAUSTED when a new session would cross the router-wide session limit.

        A thread at its own cap is let through: storing its new session prunes one of its
        own (spec 05 §3.5), so the router-wide count does not grow.
        """
        if self._budget is not None and len(self._procs) < self._max:
            self._budget.check()

    async def reserve(self) -> int:
        """Reserve an id unique across routers (claimed in the shared store when distributed)."""
        self.check_room()
        for _ in range(1_000):
            pid = self.reserve_id()
            if pid in self._shared_ids:
                # A shared session's id: stays reserved here so it is not drawn again.
                continue
            if not self.distributed or self._shared is None:
                return pid
            try:
                if await self._shared.reserve_session_id(self._thread_id, pid):
                    return pid
            except SharedStateUnavailableError:
                # Store down: unique here and among the shared ids last seen (a local
                # session needs no more; a remote one fails publishing it, UNAVAILABLE).
                return pid
        raise RuntimeError("no free unified-exec session id")

    async def release(self, process_id: int) -> None:
        """Release an id here and in the shared store."""
        self.release_id(process_id)
        if self.distributed and self._shared is not None:
            await self._shared.release_session_id(self._thread_id, process_id)

    # --- shared sessions -------------------------------------------------------------------

    async def refresh(self) -> None:
        """Re-read which shared sessions exist (the sync `exists` answers from it)."""
        if self.distributed and self._shared is not None:
            records = await self._shared.list_sessions(self._thread_id)
            self._known = {r.session_id: r for r in records}
            self._shared_ids = set(self._known)

    async def republish(self) -> None:
        """Store the shared records this replica knows again, each only when absent."""
        if self.distributed and self._shared is not None:
            for record in list(self._known.values()):
                await self._shared.put_session_if_absent(self._thread_id, record)

    async def keep_alive(self) -> int:
        """Renew the daemon owner TTL of the thread's shared sessions; how many there are.

        Called while the thread lives (the sweeper), so a session idle on its daemon dies
        only with its thread, never at the daemon's owner TTL alone.
        """
        if not self.distributed or self._shared is None:
            return 0
        records = await self._shared.list_sessions(self._thread_id)
        self._known = {r.session_id: r for r in records}
        await asyncio.gather(*(session_status(r, self._environments) for r in records))
        return len(records)

    async def kill_known(self) -> int:
        """Kill the shared sessions last seen (the thread expired); how many."""
        records, self._known = list(self._known.values()), {}
        return await terminate_records(records, self._environments)

    def exists(self, process_id: int) -> bool:
        """Known here, lost with its environment, or shared (as of the last refresh)."""
        return (
            process_id in self._procs or process_id in self._lost or process_id in self._shared_ids
        )

    async def open(self, process_id: int, wait_s: float = 0.0) -> UnifiedProcess | None:
        """A stored process, or a shared remote session re-attached for this request.

        A shared session is polled under its lease: a concurrent poll (any router) is
        waited for up to `wait_s`, then SessionBusyError. An unreachable daemon raises
        EnvironmentUnavailableError. The caller ends with `settle` (or `finish` once the
        exit was reported), which stores the consumed seq and releases the lease.
        """
        proc = self._procs.get(process_id)
        if proc is not None or not self.distributed or self._shared is None:
            return proc
        lease = await SessionLease.acquire(self._shared, self._thread_id, process_id, wait_s)
        try:
            record = await self._shared.get_session(self._thread_id, process_id)
            if record is None:
                self._shared_ids.discard(process_id)
                self._known.pop(process_id, None)
            else:
                self._known[process_id] = record
                proc = await reattach(record, self._environments, self.clock)
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

    async def publish_started(self, proc: UnifiedProcess) -> None:
        """Register a new remote session in the shared store before its first yield, under
        its lease, so a router dying mid-yield leaves a session others can poll and kill."""
        if not self.distributed or self._shared is None:
            return
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
        except Exception:
            # Best effort: then it is published when the first yield ends, as before.
            _log.warning("session %d not published before its first yield", pid, exc_info=True)
            if lease is not None:
                await lease.release()
            return
        self._leases[pid] = lease
        self._published.add(pid)
        self._shared_ids.add(pid)

    def hand_over(self, proc: UnifiedProcess) -> None:
        """A published first yield is going away (cancelled): settle it in the background."""
        if proc.process_id in self._published:
            self._reaping.spawn(self.settle(proc), name=f"unified-settle-{proc.process_id}")

    async def settle(self, proc: UnifiedProcess) -> None:
        """After a response: publish a live remote session (distributed), or update it."""
        pid = proc.process_id
        attached = self._attached.get(pid) is proc
        stored = self._procs.get(pid) is proc
        lease = self._leases.pop(pid, None) if attached or stored else None
        try:
            await self._settle(proc, attached, stored, lease)
        finally:
            if lease is not None:
                await lease.release()

    async def _settle(
        self, proc: UnifiedProcess, attached: bool, stored: bool, lease: SessionLease | None
    ) -> None:
        pid = proc.process_id
        published = stored and pid in self._published
        if not self.distributed or self._shared is None or proc.exited:
            if attached or published:
                # Exit seen but not reported (interrupted): the record stays for a re-poll.
                if attached:
                    del self._attached[pid]
                else:
                    del self._procs[pid]
                self._published.discard(pid)
                await proc.release()
            return
        remote = remote_env(self._environments, proc.meta.environment_id) is not None
        if not attached and not (stored and remote):
            return
        record = record_of(proc, self._instance_id)
        if lease is None:
            await self._shared.put_session(self._thread_id, record)
        elif not await self._shared.update_session(
            self._thread_id, record, lease.token, lease.expected_seq
        ):
            # The lease expired and another poll went on, or the thread ended: this poll's
            # position is stale, and storing it would replay or skip output.
            _log.warning("session %d: consumed seq not stored (lease lost or ended)", pid)
        self._shared_ids.add(pid)
        self._known[pid] = record
        if attached:
            del self._attached[pid]
        else:
            del self._procs[pid]
            self._published.discard(pid)
        # The daemon keeps the detached process; the next poll (any router) re-attaches.
        self._reserved.discard(pid)
        await proc.release()

    async def list_sessions(self) -> list[SessionInfo]:
        """Local sessions plus the thread's shared remote ones (state asked of the daemon)."""
        out = {info.session_id: info for info in self.sessions()}
        if self.distributed and self._shared is not None:
            records = [
                r for r in await self._shared.list_sessions(self._thread_id)
                if r.session_id not in out
            ]  # fmt: skip
            for info in await asyncio.gather(
                *(shared_session_info(r, self._environments) for r in records)
            ):
                out[info.session_id] = info
        return [out[k] for k in sorted(out)]

    # --- storage -------------------------------------------------------------------------

    def get(self, process_id: int) -> UnifiedProcess | None:
        """A stored process."""
        return self._procs.get(process_id)

    def lost_environment(self, process_id: int) -> str | None:
        """The environment id when this session was lost with its environment."""
        return self._lost.get(process_id)

    def __len__(self) -> int:
        return len(self._procs)

    def store(self, proc: UnifiedProcess) -> list[str]:
        """Store a live process, pruning one first when full; returns model warnings."""
        if len(self._procs) >= self._max:
            victim = process_id_to_prune(
                [ProcessUsage(p.process_id, p.last_used, p.exited) for p in self._procs.values()],
                protect=min(PROTECTED_RECENT_PROCESSES, self._max - 1),
            )
            if victim is not None:
                self._prune(victim)
        self._procs[proc.process_id] = proc
        warning = process_limit_warning(len(self._procs))
        return [warning] if warning else []

    def _prune(self, process_id: int) -> None:
        proc = self._procs.pop(process_id)
        self.release_id(process_id)
        self._reaping.spawn(proc.terminate(), name=f"unified-prune-{process_id}")

    def remove(self, process_id: int) -> UnifiedProcess | None:
        """Forget a process whose exit was reported; its id is released."""
        proc = self._procs.pop(process_id, None)
        self.release_id(process_id)
        if proc is not None and proc.lost is not None:
            self._lost[process_id] = proc.meta.environment_id
        return proc

    async def finish(self, proc: UnifiedProcess) -> None:
        """Remove a process whose exit was reported and release its resources."""
        pid = proc.process_id
        lease = self._leases.pop(pid, None)
        try:
            shared = self._attached.get(pid) is proc or pid in self._published
            if self._attached.get(pid) is proc:
                del self._attached[pid]
                if proc.lost is not None:
                    self._lost[pid] = proc.meta.environment_id
            else:
                self.remove(pid)
            if shared:
                self._published.discard(pid)
                assert self._shared is not None
                await self._shared.delete_session(self._thread_id, pid)
                self._shared_ids.discard(pid)
                self._known.pop(pid, None)
            await proc.terminate()
        finally:
            if lease is not None:
                await lease.release()

    async def terminate(self, process_id: int) -> bool:
        """Kill one session (TerminateSession); unknown → NOT_FOUND; whether it was running."""
        proc = self._procs.pop(process_id, None)
        if proc is None:
            return await self._terminate_shared(process_id)
        self.release_id(process_id)
        running = not proc.exited
        await proc.terminate()
        if self.distributed and self._shared is not None:
            if process_id in self._published:
                self._published.discard(process_id)
                await self._shared.delete_session(self._thread_id, process_id)
            await self._shared.release_session_id(self._thread_id, process_id)
        return running

    async def _terminate_shared(self, process_id: int) -> bool:
        record = None
        if self.distributed and self._shared is not None:
            record = await self._shared.get_session(self._thread_id, process_id)
        if record is None:
            raise UnknownSessionError(f"unknown session {process_id}")
        assert self._shared is not None
        env = remote_env(self._environments, record.environment_id)
        running = False
        if env is not None:
            # Unreachable daemon: EnvironmentUnavailableError; the record stays.
            running = await env.terminate_process(record.backend_process_id)
        await self._shared.delete_session(self._thread_id, process_id)
        self._shared_ids.discard(process_id)
        self._known.pop(process_id, None)
        return running

    async def terminate_all(self) -> int:
        """Kill every session (EndThread, shutdown); returns how many were stored."""
        procs, self._procs = list(self._procs.values()), {}
        for proc in procs:
            self.release_id(proc.process_id)
        # First yields' leases die with their processes (a re-attached poll owns its own).
        leases = [self._leases.pop(p.process_id) for p in procs if p.process_id in self._leases]
        self._published.clear()
        await asyncio.gather(*(p.terminate() for p in procs), return_exceptions=True)
        await asyncio.gather(*(lease.release() for lease in leases))
        await self._reaping.join()
        return len(procs)

    def sessions(self) -> list[SessionInfo]:
        """Stored sessions by id."""
        out: list[SessionInfo] = []
        for pid in sorted(self._procs):
            proc = self._procs[pid]
            status = proc.exit_status
            out.append(
                SessionInfo(
                    session_id=pid,
                    environment_id=proc.meta.environment_id,
                    call_id=proc.meta.call_id,
                    argv=proc.meta.argv,
                    tty=proc.meta.tty,
                    running=status is None,
                    exit_code=None if status is None else status.shell_code,
                    started_at_ms=proc.meta.started_at_ms,
                    last_used_at_ms=proc.last_used_at_ms,
                )
            )
        return out

    def usage(self) -> list[ProcessUsage]:
        """What pruning would look at now."""
        return [ProcessUsage(p.process_id, p.last_used, p.exited) for p in self._procs.values()]
