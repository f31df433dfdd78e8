"""Caller-scoped process table: ids, limits, idempotent starts, TTLs and retention sweeps."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass

from shellgate.common.errors import DrainingError, LimitExceededError, ProcessNotFoundError
from shellgate.common.head_tail import UNIFIED_EXEC_OUTPUT_MAX_BYTES, HeadTailBuffer
from shellgate.common.process.base import Backend, SpawnRequest
from shellgate.common.process.retention import Retention
from shellgate.common.tasks import TaskSet
from shellgate.execserver.managed import Clock, ManagedProcess

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableLimits:
    """Bounds of the table (see config.ServerConfig for the documented defaults)."""

    max_processes_per_caller: int = 64
    max_processes_total: int = 256
    retained_bytes: int = 1024 * 1024
    exited_retention_ms: int = 30_000
    owner_ttl_ms: int = 30 * 60_000
    idempotency_ttl_ms: int = 5 * 60_000
    exit_drain_ms: int = 2_000
    exit_drain_cap_ms: int = 60_000
    slow_consumer_stall_ms: int = 0


@dataclass(frozen=True)
class StartSpec:
    """A validated Start: what to spawn and how the table should keep it."""

    caller: str
    owner: str
    spawn: SpawnRequest
    detach: bool
    owner_ttl_ms: int | None
    timeout_ms: int | None
    request_id: str | None
    sandboxed: bool


class ProcessTable:
    """Every process of the daemon, keyed by daemon-assigned id and scoped by caller."""

    def __init__(
        self, backend: Backend, limits: TableLimits, clock: Clock = time.monotonic
    ) -> None:
        self._backend = backend
        self._limits = limits
        self._clock = clock
        self._procs: dict[str, ManagedProcess] = {}
        # Entries of _procs per caller, kept in step so a Start's limit check is O(1)
        # (retained exited processes can number thousands).
        self._by_caller: dict[str, int] = {}
        self._idempotent: dict[tuple[str, str], tuple[asyncio.Future[str], float]] = {}
        self._pending = 0
        self._pending_by_caller: dict[str, int] = {}
        # Closed processes evicted to make room, released in the background (owned here,
        # joined by shutdown; a failure is logged).
        self._disposing = TaskSet(log)
        self._draining = False

    def running(self) -> int:
        """Processes that have not exited yet (the metrics gauge)."""
        return sum(not p.exited for p in list(self._procs.values()))

    def _count(self, caller: str) -> int:
        return self._by_caller.get(caller, 0) + self._pending_by_caller.get(caller, 0)

    def _add(self, proc: ManagedProcess) -> None:
        self._procs[proc.process_id] = proc
        self._by_caller[proc.caller] = self._by_caller.get(proc.caller, 0) + 1

    def _pop(self, process_id: str) -> ManagedProcess | None:
        proc = self._procs.pop(process_id, None)
        if proc is not None:
            left = self._by_caller[proc.caller] - 1
            if left:
                self._by_caller[proc.caller] = left
            else:
                del self._by_caller[proc.caller]
        return proc

    async def start(self, spec: StartSpec) -> tuple[ManagedProcess, bool]:
        """Spawn (or, for a known request_id, return the existing process and True)."""
        if self._draining:
            raise DrainingError("daemon is shutting down")
        key = (spec.caller, spec.request_id) if spec.request_id else None
        if key is not None:
            known = self._idempotent.get(key)
            if known is not None and known[1] > self._clock():
                # Same id → same process, even while the first Start is still spawning.
                process_id = await asyncio.shield(known[0])
                return self.get(spec.caller, process_id), True
        # Limits are checked before spawning so a flood fails fast; spawns in flight count.
        # Closed processes only wait out their retention: the oldest make room first.
        limits = self._limits
        over_total = len(self._procs) + self._pending - limits.max_processes_total + 1
        if over_total > 0:
            self._evict_closed(None, over_total)
        if len(self._procs) + self._pending >= limits.max_processes_total:
            raise LimitExceededError(
                f"too many processes on this daemon (max_processes_total = "
                f"{limits.max_processes_total})",
                limit="max_processes_total",
            )
        over_caller = self._count(spec.caller) - limits.max_processes_per_caller + 1
        if over_caller > 0:
            self._evict_closed(spec.caller, over_caller)
        if self._count(spec.caller) >= limits.max_processes_per_caller:
            raise LimitExceededError(
                f"too many processes for this caller (max_processes_per_caller = "
                f"{limits.max_processes_per_caller})",
                limit="max_processes_per_caller",
            )
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        if key is not None:
            expires = self._clock() + self._limits.idempotency_ttl_ms / 1000
            self._idempotent[key] = (future, expires)
        self._pending += 1
        self._pending_by_caller[spec.caller] = self._pending_by_caller.get(spec.caller, 0) + 1
        try:
            handle = await self._backend.start(spec.spawn)
        except BaseException as exc:
            if key is not None:
                self._idempotent.pop(key, None)
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._pending -= 1
            self._pending_by_caller[spec.caller] -= 1
        proc = ManagedProcess(
            process_id=uuid.uuid4().hex,
            caller=spec.caller,
            owner=spec.owner,
            request=spec.spawn,
            handle=handle,
            retention=Retention(self._limits.retained_bytes),
            detached=spec.detach,
            owner_ttl_ms=spec.owner_ttl_ms or self._limits.owner_ttl_ms,
            sandboxed=spec.sandboxed,
            clock=self._clock,
            exit_drain_ms=self._limits.exit_drain_ms,
            exit_drain_cap_ms=self._limits.exit_drain_cap_ms,
            stall_ms=self._limits.slow_consumer_stall_ms,
            # A detached process is a unified-exec session: Codex's per-process budget.
            capture=HeadTailBuffer(UNIFIED_EXEC_OUTPUT_MAX_BYTES) if spec.detach else None,
        )
        self._add(proc)
        proc.start_tasks(spec.timeout_ms)
        future.set_result(proc.process_id)
        return proc, False

    def _evict_closed(self, caller: str | None, count: int) -> None:
        # Synchronous removal (concurrent Starts see the room at once); the leftovers of a
        # closed process are released in the background.
        closed = sorted(
            (p for p in self._procs.values()
             if p.closed_at is not None and (caller is None or p.caller == caller)),
            key=lambda p: p.closed_at or 0.0,
        )
        for proc in closed[:count]:
            self._pop(proc.process_id)
            self._disposing.spawn(proc.dispose(), name=f"dispose-{proc.process_id}")

    def get(self, caller: str, process_id: str) -> ManagedProcess:
        """The caller's process; other callers' processes are NOT_FOUND, not forbidden."""
        proc = self._procs.get(process_id)
        if proc is None or proc.caller != caller:
            raise ProcessNotFoundError(f"unknown process id {process_id}")
        return proc

    def list(self, caller: str, owner: str = "") -> list[ManagedProcess]:
        """The caller's processes, optionally of one owner, oldest first."""
        return [
            p
            for p in self._procs.values()
            if p.caller == caller and (not owner or p.owner == owner)
        ]

    async def remove(self, process_id: str) -> None:
        """Kill what remains of a process and forget it."""
        proc = self._pop(process_id)
        if proc is not None:
            await proc.dispose()

    async def sweep(self) -> None:
        """Drop closed processes past retention; kill detached ones idle past their TTL.

        A closed session whose last output no Drain has taken yet is kept like a running
        detached one: until its owner TTL passes without use (a router's poll or status
        check renews it while the session's thread lives), so its exit code and final
        output outlive the process for the session's life; Starts short of room still
        evict the oldest closed processes first (bounded by the process limits).
        """
        now = self._clock()
        for key, (_, expires) in list(self._idempotent.items()):
            if expires <= now:
                del self._idempotent[key]
        doomed: list[str] = []
        for proc in self._procs.values():
            if proc.closed_at is not None and proc.awaits_final_drain:
                if now - max(proc.closed_at, proc.last_activity) >= proc.owner_ttl_ms / 1000:
                    doomed.append(proc.process_id)
            elif proc.closed_at is not None:
                # A session's retention counts from its final drain (a re-poll still finds it).
                since = (
                    max(proc.closed_at, proc.last_activity)
                    if proc.capture is not None
                    else proc.closed_at
                )
                if now - since >= self._limits.exited_retention_ms / 1000:
                    doomed.append(proc.process_id)
            elif (
                proc.detached
                and proc.attached == 0
                and now - proc.last_activity >= proc.owner_ttl_ms / 1000
            ):
                log.info("owner ttl expired for process %s", proc.process_id)
                doomed.append(proc.process_id)
        await asyncio.gather(*(self.remove(pid) for pid in doomed))

    async def run_sweeper(self, interval_ms: int) -> None:
        """Sweep forever (cancel to stop)."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await self.sweep()
            except Exception:
                # One failed pass must not end the sweeper: try again next interval.
                log.exception("process sweep failed")

    async def shutdown(self) -> None:
        """Refuse new starts and kill every process group."""
        self._draining = True
        procs, self._procs = list(self._procs.values()), {}
        self._by_caller.clear()
        await asyncio.gather(*(p.dispose() for p in procs), return_exceptions=True)
        await self._disposing.join()
        await self._backend.aclose()
