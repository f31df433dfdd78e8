"""Unified-exec sessions of one thread: ids, storage and pruning (spec 05 §3.5)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable

from shellgate.common.tasks import TaskSet
from shellgate.router.output.unified_rules import (
    MAX_UNIFIED_EXEC_PROCESSES,
    PROTECTED_RECENT_PROCESSES,
    ProcessUsage,
    allocate_process_id,
    process_id_to_prune,
    process_limit_warning,
)
from shellgate.router.runtime.store.shared_state import SharedState
from shellgate.router.runtime.threads.session_sharing import LocalSessions, SessionSharing
from shellgate.router.runtime.threads.shared_records import SessionEnvironments, SessionInfo
from shellgate.router.runtime.threads.shared_sessions import SharedSessions
from shellgate.router.runtime.threads.tally import CountedSet, Tally
from shellgate.router.runtime.threads.unified_process import UnifiedProcess

__all__ = ["SessionInfo", "SessionManager"]

_log = logging.getLogger(__name__)


_ENDED_EXIT_WAIT_S = 1.0


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
        # Single router until `bind` says the thread's store is shared (chosen once).
        self._sharing: SessionSharing = LocalSessions()
        # Set by terminate_all (the thread ended): a process still starting then is killed
        # instead of stored, as no one could poll or end it any more.
        self.closed = False

    def bind(
        self,
        thread_id: str,
        shared: SharedState,
        environments: SessionEnvironments | None,
        instance_id: str,
    ) -> None:
        """Attach the thread's shared store (remote sessions go there when distributed)."""
        self._sharing = (
            SharedSessions(shared, thread_id, environments, instance_id, self.clock)
            if shared.distributed
            else LocalSessions()
        )

    @property
    def distributed(self) -> bool:
        """Whether remote sessions are published for other routers."""
        return self._sharing.distributed

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
            if self._sharing.knows(pid):
                # A shared session's id: stays reserved here so it is not drawn again.
                continue
            if await self._sharing.claim_id(pid):
                return pid
        raise RuntimeError("no free unified-exec session id")

    async def release(self, process_id: int) -> None:
        """Release an id here and in the shared store."""
        self.release_id(process_id)
        await self._sharing.release_id(process_id)

    # --- shared sessions -------------------------------------------------------------------

    async def refresh(self) -> None:
        """Re-read which shared sessions exist (the sync `exists` answers from it)."""
        await self._sharing.refresh()

    async def republish(self) -> None:
        """Store the shared records this replica knows again, each only when absent."""
        await self._sharing.republish()

    async def publish_held(self) -> int:
        """Publish the sessions kept here while the store was down; how many were."""
        return await self._sharing.publish_held(self)

    @property
    def holding(self) -> bool:
        """Whether sessions wait here for the shared store to publish them."""
        return self._sharing.holding

    def mark_stale(self) -> None:
        """The shared store could not be read: an id unknown here may still be shared."""
        self._sharing.mark_stale()

    async def keep_alive(self) -> int:
        """Renew the daemon owner TTL of the thread's shared sessions; how many there are.

        Called while the thread lives (the sweeper), so a session idle on its daemon dies
        only with its thread, never at the daemon's owner TTL alone.
        """
        return await self._sharing.keep_alive()

    async def kill_known(self) -> int:
        """Kill the shared sessions last seen (the thread expired); how many."""
        return await self._sharing.kill_known()

    def exists(self, process_id: int) -> bool:
        """Known here, lost with its environment, or possibly shared (a known shared id, or
        any id while the store could not be read: the poll then asks it)."""
        return (
            process_id in self._procs
            or process_id in self._lost
            or self._sharing.may_exist(process_id)
        )

    async def open(self, process_id: int, wait_s: float = 0.0) -> UnifiedProcess | None:
        """A stored process, or a shared remote session re-attached for this request.

        A shared session is polled under its lease: a concurrent poll (any router) is
        waited for up to `wait_s`, then SessionBusyError. An unreachable daemon raises
        EnvironmentUnavailableError. The caller ends with `settle` (or `finish` once the
        exit was reported), which stores the consumed seq and releases the lease.
        """
        proc = self._procs.get(process_id)
        if proc is not None:
            return proc
        return await self._sharing.open(process_id, wait_s)

    async def publish_started(self, proc: UnifiedProcess) -> None:
        """Register a new remote session in the shared store before its first yield, under
        its lease, so a router dying mid-yield leaves a session others can poll and kill."""
        await self._sharing.publish_started(proc)

    def hand_over(self, proc: UnifiedProcess) -> None:
        """A published first yield is going away (cancelled): settle it in the background."""
        if self._sharing.published(proc.process_id):
            self._reaping.spawn(self.settle(proc), name=f"unified-settle-{proc.process_id}")

    async def settle(self, proc: UnifiedProcess) -> None:
        """After a response: publish a live remote session (distributed), or update it."""
        await self._sharing.settle(proc, self)

    async def list_sessions(self) -> list[SessionInfo]:
        """Local sessions plus the thread's shared remote ones (state asked of the daemon)."""
        out = {info.session_id: info for info in self.sessions()}
        for info in await self._sharing.list_sessions(exclude=out):
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

    async def end_if_closed(self, proc: UnifiedProcess) -> None:
        """Kill a process that was still starting when the thread ended (terminate_all could
        not see it) and wait for its exit, so its call answers with that exit."""
        if not self.closed or proc.exited:
            return
        with contextlib.suppress(Exception):
            await proc.handle.terminate()
        # handle.terminate waited for the group; the exit watcher still needs its turn.
        await proc.wait_exit(_ENDED_EXIT_WAIT_S)

    def store(self, proc: UnifiedProcess) -> list[str]:
        """Store a live process, pruning one first when full; returns model warnings."""
        if self.closed:
            self.release_id(proc.process_id)
            self._reaping.spawn(proc.terminate(), name=f"unified-ended-{proc.process_id}")
            return []
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

    def untrack(self, process_id: int) -> None:
        """Stop storing a process that lives on elsewhere (its id stays reserved)."""
        del self._procs[process_id]

    def track(self, proc: UnifiedProcess) -> None:
        """Store a re-attached process the shared store could not take back (no pruning)."""
        self._reserved.add(proc.process_id)
        self._procs[proc.process_id] = proc

    async def finish(self, proc: UnifiedProcess) -> None:
        """Remove a process whose exit was reported and release its resources."""
        pid = proc.process_id
        async with self._sharing.leased(pid):
            attached = self._sharing.detach(proc)
            if not attached:
                self.remove(pid)
            elif proc.lost is not None:
                self._lost[pid] = proc.meta.environment_id
            await self._sharing.ended(pid, attached)
            await proc.terminate()

    async def terminate(self, process_id: int) -> bool:
        """Kill one session (TerminateSession); unknown → NOT_FOUND; whether it was running."""
        proc = self._procs.pop(process_id, None)
        if proc is None:
            return await self._sharing.terminate(process_id)
        self.release_id(process_id)
        running = not proc.exited
        await proc.terminate()
        await self._sharing.terminated(process_id)
        return running

    async def terminate_all(self) -> int:
        """Kill every session (EndThread, shutdown); returns how many were stored."""
        self.closed = True
        procs, self._procs = list(self._procs.values()), {}
        for proc in procs:
            self.release_id(proc.process_id)
        # First yields' leases die with their processes (a re-attached poll owns its own).
        leases = self._sharing.drop_first_yields([p.process_id for p in procs])
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
