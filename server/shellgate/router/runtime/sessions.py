"""Unified-exec sessions of one thread: ids, storage and pruning (spec 05 §3.5)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from shellgate.router.runtime.errors import UnknownSessionError
from shellgate.router.runtime.unified_process import UnifiedProcess
from shellgate.router.unified import (
    MAX_UNIFIED_EXEC_PROCESSES,
    ProcessUsage,
    allocate_process_id,
    process_id_to_prune,
    process_limit_warning,
)

__all__ = ["SessionInfo", "SessionManager"]


@dataclass(frozen=True)
class SessionInfo:
    """One stored session as ListSessions shows it."""

    session_id: int
    environment_id: str
    call_id: str
    argv: tuple[str, ...]
    tty: bool
    running: bool
    exit_code: int | None
    started_at_ms: int
    last_used_at_ms: int


class SessionManager:
    """The unified-exec processes of one thread; they outlive requests and turns."""

    def __init__(
        self,
        *,
        deterministic_ids: bool = False,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_processes: int = MAX_UNIFIED_EXEC_PROCESSES,
    ) -> None:
        self._deterministic = deterministic_ids
        self._rng = rng or random.Random()
        self.clock = clock
        self._max = max_processes
        self._reserved: set[int] = set()
        self._procs: dict[int, UnifiedProcess] = {}
        # Sessions whose environment was lost: later writes get the lost text, not "unknown".
        self._lost: dict[int, str] = {}
        # Pruned processes being terminated in the background (owned here, awaited on close).
        self._reaping: set[asyncio.Task[None]] = set()

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
                [ProcessUsage(p.process_id, p.last_used, p.exited) for p in self._procs.values()]
            )
            if victim is not None:
                self._prune(victim)
        self._procs[proc.process_id] = proc
        warning = process_limit_warning(len(self._procs))
        return [warning] if warning else []

    def _prune(self, process_id: int) -> None:
        proc = self._procs.pop(process_id)
        self.release_id(process_id)
        task = asyncio.create_task(proc.terminate(), name=f"unified-prune-{process_id}")
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    def remove(self, process_id: int) -> UnifiedProcess | None:
        """Forget a process whose exit was reported; its id is released."""
        proc = self._procs.pop(process_id, None)
        self.release_id(process_id)
        if proc is not None and proc.lost is not None:
            self._lost[process_id] = proc.meta.environment_id
        return proc

    async def finish(self, proc: UnifiedProcess) -> None:
        """Remove a process whose exit was reported and release its resources."""
        self.remove(proc.process_id)
        await proc.terminate()

    async def terminate(self, process_id: int) -> bool:
        """Kill one session (TerminateSession); unknown → NOT_FOUND; whether it was running."""
        proc = self._procs.pop(process_id, None)
        if proc is None:
            raise UnknownSessionError(f"unknown session {process_id}")
        self.release_id(process_id)
        running = not proc.exited
        await proc.terminate()
        return running

    async def terminate_all(self) -> int:
        """Kill every session (EndThread, shutdown); returns how many were stored."""
        procs, self._procs = list(self._procs.values()), {}
        for proc in procs:
            self.release_id(proc.process_id)
        await asyncio.gather(*(p.terminate() for p in procs), return_exceptions=True)
        reaping = list(self._reaping)
        for task in reaping:
            with contextlib.suppress(Exception):
                await task
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
