"""One process under the daemon's care: its handle, retained events and lifecycle tasks."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shellgate.common.head_tail import HeadTailBuffer, HeadTailSnapshot, joined
from shellgate.common.process.base import ExitStatus, ProcessHandle, Signal, SpawnRequest
from shellgate.common.process.retention import Retention
from shellgate.common.tasks import TaskSet, cancel_and_wait
from shellgate.execserver.awaiting_input import is_awaiting_input
from shellgate.execserver.denial import DenialScanner

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class ProcessState(enum.Enum):
    """Lifecycle state as listed."""

    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    EXITED = "exited"
    CLOSED = "closed"


@dataclass(frozen=True)
class CaptureDrain:
    """What one Drain took from a session's capture, and where in the output it ends."""

    snapshot: HeadTailSnapshot
    # The seq and end offset of the last output chunk captured (this and earlier drains).
    through_seq: int
    through_offset: int
    # Closed when drained: the snapshot holds the last of the output.
    closed: bool


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
    # After the exit, how long output may keep flowing (a background grandchild holding
    # the pipes) before the streams are cut and `closed` is emitted.
    exit_drain_ms: int = 2_000
    # 0 (the default): an attached follower (Start/Attach stream) holds the process back for
    # as long as it takes, so it never loses a byte. > 0: after this long without progress
    # the pump stops waiting for it and retention evicts (a SLOW_CONSUMER gap).
    stall_ms: int = 0
    # Upper bound of the post-exit drain even while a paced consumer keeps it alive.
    exit_drain_cap_ms: int = 60_000
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    last_activity: float = 0.0
    last_activity_ms: int = 0
    closed_at: float | None = None
    timed_out: bool = False
    failure: str = ""
    attached: int = 0
    terminated: bool = False
    denied_at_exit: bool = False
    # Stdin writes so far: a follower resets its idle-probe backoff when this moves.
    inputs: int = 0
    # A detached (unified-exec) process's head/tail capture since the last Drain, fed by the
    # pump itself: the one writer, so every router polling the session reads the same text
    # however much retention evicted, and each byte leaves it once (SessionOutputService).
    capture: HeadTailBuffer | None = None
    capture_seq: int = 0
    capture_offset: int = 0
    # Set by the Drain that took the last of the output (after the close): from then on
    # the process is kept only for exited_retention_ms, like any other closed process.
    capture_final: bool = False
    # A held (two-phase) Drain not yet acknowledged: returned again, joined with what came
    # after, by a Drain that does not acknowledge it (its taker died before storing it).
    held_drain: CaptureDrain | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    # The pump and the timeout watchdog: owned here, ended by dispose(); a failure is logged.
    _tasks: TaskSet = field(default_factory=lambda: TaskSet(log))
    _scanner: DenialScanner = field(default_factory=DenialScanner)
    # Paced followers: token → total output bytes delivered to them.
    _pacers: dict[int, int] = field(default_factory=dict)
    _next_token: int = 0
    _progress: asyncio.Event | None = None
    _pacing_since: float | None = None
    _paced_s: float = 0.0

    def __post_init__(self) -> None:
        self.touch()

    def add_pacer(self, delivered: int | None = None) -> int:
        """Register a follower the pump must not outrun by more than the retention bound.

        `delivered`: the output offset the follower has seen up to (default: everything
        so far, i.e. a follower from the start or from the live end).
        """
        self._next_token += 1
        start = self.retention.added_bytes if delivered is None else delivered
        self._pacers[self._next_token] = start
        return self._next_token

    def pacer_progress(self, token: int, end: int) -> bool:
        """Record delivery through byte `end`; False once the pacer was dropped as stalled."""
        if token not in self._pacers:
            return False
        self._pacers[token] = end
        if self._progress is not None:
            self._progress.set()
        return True

    def remove_pacer(self, token: int) -> None:
        """The follower ended."""
        self._pacers.pop(token, None)
        if self._progress is not None:
            self._progress.set()

    def is_pacer(self, token: int) -> bool:
        """Still paced (not dropped as a slow consumer)."""
        return token in self._pacers

    async def _pace(self, size: int) -> None:
        # Adding `size` bytes must not evict anything a paced follower has not delivered:
        # wait for it. While the pump waits it reads nothing, so the pipe fills and the
        # child blocks on its write (back-pressure). By default the wait has no bound (an
        # attached reader never loses a byte; its stall holds only this process, and the
        # timeout watchdog, Terminate and the stream's end still work); with stall_ms > 0 a
        # follower without progress for that long is dropped (it sees a SLOW_CONSUMER gap).
        # Not an OutputChannel: retention is a replay log read by many followers (Start,
        # Attach, Read) at their own cursors, and chunks leave it by eviction, not by being
        # taken; only the slowest paced cursor bounds the producer.
        ret = self.retention
        while self._pacers:
            slowest = min(self._pacers.values())
            # A follower that has everything admits any chunk, even one larger than the
            # retention bound (it is kept whole), so an oversized chunk cannot wait forever.
            if ret.added_bytes + size - slowest <= ret.max_bytes or slowest >= ret.added_bytes:
                return
            self._progress = asyncio.Event()
            self._pacing_since = self.clock()
            try:
                async with asyncio.timeout(self.stall_ms / 1000 if self.stall_ms > 0 else None):
                    await self._progress.wait()
            except TimeoutError:
                for token, end in list(self._pacers.items()):
                    if end == slowest:
                        del self._pacers[token]
            finally:
                self._progress = None
                self._paced_s += self.clock() - self._pacing_since
                self._pacing_since = None

    def _paced_seconds(self) -> float:
        """Total time the pump has waited for paced followers (including a current wait)."""
        current = self.clock() - self._pacing_since if self._pacing_since is not None else 0.0
        return self._paced_s + current

    async def _drain_after_exit(self, reader: asyncio.Task[None]) -> bool:
        """Wait for the output to end after the exit; True when it had to be cut off.

        Only time the pump spends *not* waiting for a paced consumer counts towards
        exit_drain_ms (output still queued for a slow but live Start stream is not cut),
        and exit_drain_cap_ms bounds the whole wait.
        """
        start, paced_at_start = self.clock(), self._paced_seconds()
        while not reader.done():
            elapsed = self.clock() - start
            unpaced = elapsed - (self._paced_seconds() - paced_at_start)
            left = min(self.exit_drain_ms / 1000 - unpaced, self.exit_drain_cap_ms / 1000 - elapsed)
            if left <= 0:
                return True
            await asyncio.wait({reader}, timeout=left)
        await reader  # surfaces a reader failure
        return False

    @property
    def sandbox_denied(self) -> bool:
        """The sandbox-denial verdict (spec 05 §1.3) over all output so far; False until exit."""
        status = self.retention.exit_status
        if status is None:
            return False
        return self._scanner.denied(status, self.timed_out, self.sandboxed)

    def touch(self) -> None:
        """Record caller activity (Attach, Read, Write) for the owner TTL."""
        self.last_activity = self.clock()
        self.last_activity_ms = int(time.time() * 1000)

    def note_input(self) -> None:
        """Record a stdin write and wake the followers (they probe for input promptly again)."""
        self.inputs += 1
        self._notify()

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
        self._tasks.spawn(self._pump(), name=f"pump-{self.process_id}")
        if timeout_ms is not None:
            self._tasks.spawn(self._watchdog(timeout_ms), name=f"watchdog-{self.process_id}")

    async def _pump(self) -> None:
        scan = self.sandboxed

        async def outputs() -> None:
            output = self.handle.output()
            try:
                async for chunk in output:
                    await self._pace(len(chunk.data))
                    if scan:
                        self._scanner.feed(chunk.stream, chunk.data)
                    added = self.retention.add_output(chunk.stream, chunk.data)
                    if self.capture is not None:
                        self.capture.push(chunk.data)
                        self.capture_seq, self.capture_offset = added.seq, added.end
                    self._notify()
            finally:
                # Closing the generator abandons the streams (the backend stops reading).
                aclose = getattr(output, "aclose", None)
                if aclose is not None:
                    await aclose()

        # Owned by this pump: cancelled (when still reading) and awaited in the finally below.
        reader = asyncio.create_task(outputs(), name=f"output-{self.process_id}")
        cut = False
        try:
            status = await self.handle.wait()
            if status.environment_lost:
                self.failure = status.environment_lost
            self.retention.mark_exited(status)
            self.denied_at_exit = self.sandbox_denied
            self._notify()
            # A background grandchild may hold the pipes open: bounded drain, then cut.
            cut = await self._drain_after_exit(reader)
        finally:
            await cancel_and_wait(reader, log=log)
        self.retention.mark_closed()
        self.closed_at = self.clock()
        self._notify()
        if cut and not self.detached:
            # Whatever still holds the pipes belongs to a classic command that is over.
            await self.terminate_quietly()

    async def _watchdog(self, timeout_ms: int) -> None:
        await asyncio.sleep(timeout_ms / 1000)
        if not self.exited:
            self.timed_out = True
            # The spec's timeout: SIGKILL the whole group at expiry.
            with contextlib.suppress(Exception):
                await self.handle.signal(Signal.KILL)

    def drain_capture(
        self, *, release: bool = False, hold: bool = False, acknowledged: int = 0
    ) -> CaptureDrain | None:
        """Take the capture (it starts over empty); None when the process keeps none.

        Synchronous on the loop, as the pump's push is: a drain sees every chunk wholly
        or not at all, so concurrent drains split the output without loss or overlap.
        `release`: the caller reported the session's end and will not drain it again.
        `hold` (two-phase): what this returns is kept until a later drain acknowledges it
        (`acknowledged` at or past its through seq); one that does not gets it again first.
        """
        if self.capture is None:
            return None
        closed = self.closed
        snapshot = self.capture.drain()
        held, self.held_drain = self.held_drain, None
        if held is not None and held.through_seq > acknowledged and not release:
            # Its taker never stored the answer (a router died mid-poll): not lost.
            snapshot = joined(held.snapshot, snapshot, self.capture.max_bytes)
        drained = CaptureDrain(snapshot, self.capture_seq, self.capture_offset, closed)
        if hold and not release:
            self.held_drain = drained
        if closed or release:
            self.capture_final = True
        self.touch()
        return drained

    @property
    def awaits_final_drain(self) -> bool:
        """A closed session whose last output and exit no Drain has returned yet."""
        return self.capture is not None and not self.capture_final

    def exit_status(self) -> ExitStatus | None:
        """The exit status once known."""
        return self.retention.exit_status

    async def terminate(self) -> bool:
        """Kill the group (TERM, grace, KILL) and wait; True when it was still running."""
        was_running = not self.exited
        self.terminated = True
        # A killed session is over: nobody drains it again (its retention is a closed one's).
        self.capture_final = True
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
            await self._tasks.aclose()
