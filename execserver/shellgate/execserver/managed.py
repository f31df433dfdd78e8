"""One process under the daemon's care: its handle, retained events and lifecycle tasks."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shellgate.execserver.awaiting_input import is_awaiting_input
from shellgate.execserver.backends.base import ExitStatus, ProcessHandle, Signal, SpawnRequest
from shellgate.execserver.retention import Retention

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class ProcessState(enum.Enum):
    """Lifecycle state as listed."""

    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    EXITED = "exited"
    CLOSED = "closed"


@dataclass
class ManagedProcess:
    """A spawned process, its sequenced output, and who may see it."""

    process_id: str
    caller: str
    owner: str
    request: SpawnRequest
    handle: ProcessHandle
    retention: Retention
    detached: bool
    owner_ttl_ms: int
    sandboxed: bool
    clock: Clock
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    last_activity: float = 0.0
    last_activity_ms: int = 0
    closed_at: float | None = None
    timed_out: bool = False
    failure: str = ""
    attached: int = 0
    terminated: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.touch()

    def touch(self) -> None:
        """Record caller activity (Attach, Read, Write) for the owner TTL."""
        self.last_activity = self.clock()
        self.last_activity_ms = int(time.time() * 1000)

    @property
    def changed(self) -> asyncio.Event:
        """An event set at the next change (new output, exit, close)."""
        return self._changed

    def _notify(self) -> None:
        # Swap the event first so waiters woken now re-arm on a fresh one.
        old, self._changed = self._changed, asyncio.Event()
        old.set()

    @property
    def exited(self) -> bool:
        """The exit is known."""
        return self.retention.exit_status is not None

    @property
    def closed(self) -> bool:
        """Both streams at EOF and the exit known."""
        return self.retention.closed_seq is not None

    def start_tasks(self, timeout_ms: int | None) -> None:
        """Start the pump (output → retention → exit → closed) and the timeout watchdog."""
        self._tasks.append(asyncio.create_task(self._pump(), name=f"pump-{self.process_id}"))
        if timeout_ms is not None:
            self._tasks.append(asyncio.create_task(self._watchdog(timeout_ms)))

    async def _pump(self) -> None:
        async def outputs() -> None:
            async for chunk in self.handle.output():
                self.retention.add_output(chunk.stream, chunk.data)
                self._notify()

        reader = asyncio.create_task(outputs())
        try:
            status = await self.handle.wait()
            if status.environment_lost:
                self.failure = status.environment_lost
            self.retention.mark_exited(status)
            self._notify()
            await reader
        finally:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        self.retention.mark_closed()
        self.closed_at = self.clock()
        self._notify()

    async def _watchdog(self, timeout_ms: int) -> None:
        await asyncio.sleep(timeout_ms / 1000)
        if not self.exited:
            self.timed_out = True
            # The spec's timeout: SIGKILL the whole group at expiry.
            with contextlib.suppress(Exception):
                await self.handle.signal(Signal.KILL)

    def exit_status(self) -> ExitStatus | None:
        """The exit status once known."""
        return self.retention.exit_status

    async def terminate(self) -> bool:
        """Kill the group (TERM, grace, KILL) and wait; True when it was still running."""
        was_running = not self.exited
        self.terminated = True
        await self.handle.terminate()
        return was_running

    async def terminate_quietly(self) -> None:
        """Terminate, logging instead of raising (background cleanup)."""
        try:
            await self.terminate()
        except Exception:
            log.exception("terminating process %s failed", self.process_id)

    def state(self) -> ProcessState:
        """Current state (reads /proc for awaiting-input; call off the loop)."""
        if self.closed:
            return ProcessState.CLOSED
        if self.exited:
            return ProcessState.EXITED
        pgid = self.handle.pgid
        if pgid is not None and is_awaiting_input(pgid):
            return ProcessState.AWAITING_INPUT
        return ProcessState.RUNNING

    async def dispose(self) -> None:
        """Kill whatever remains and stop the tasks (entry removal and shutdown)."""
        try:
            await self.handle.terminate()
        finally:
            for task in self._tasks:
                if not task.done():
                    task.cancel()
            for task in self._tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
