"""One unified-exec process: a background pump into a head/tail buffer, exit and close state.

Where a session's model-visible output is captured: a daemon process keeps its own capture
(the exec-server's SessionOutputService, one writer for every replica: see
`shellgate.execserver.session_output`), and each poll takes it there; the buffer here is
the capture of the embedded environment's processes, and the fallback for a daemon that
keeps none (or no longer keeps the process), fed only with bytes no daemon drain returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from shellgate.common.head_tail import DrainedCapture
from shellgate.common.output_channel import RoomCheck, pause_until
from shellgate.common.process.base import ExitStatus, OutputChunk, ProcessHandle
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.output.head_tail import HeadTailBuffer, HeadTailSnapshot
from shellgate.router.runtime.threads.output_tap import OutputTap

__all__ = [
    "CapturedHandle",
    "OutputListener",
    "ProcessMeta",
    "ReattachableHandle",
    "UnifiedProcess",
]

# Receives every chunk with its per-process seq while a request is attached.
OutputListener = Callable[[OutputChunk, int], None]
_log = logging.getLogger(__name__)


@runtime_checkable
class ReattachableHandle(ProcessHandle, Protocol):
    """A handle another router can re-attach to (a daemon's process): it reports how far
    its output was delivered, and can be let go without killing the process."""

    delivered_seq: int
    delivered_offset: int

    async def release(self) -> None:
        """Stop following the process; it keeps running on its daemon."""
        ...


@runtime_checkable
class CapturedHandle(Protocol):
    """A handle whose process keeps its own head/tail capture (a daemon's session)."""

    async def drain_capture(
        self, *, release: bool = False, hold: bool = False, acknowledged: int = 0
    ) -> DrainedCapture | None:
        """Take the capture (`release`: its end was reported; `hold`: two-phase, kept until
        a drain `acknowledged` past it); None when there is none."""
        ...

    def release_capture(self) -> None:
        """The session's end was reported: the daemon may forget it (in the background)."""
        ...


def _drained_status(drained: DrainedCapture) -> ExitStatus:
    if drained.failure:
        return ExitStatus(environment_lost=drained.failure)
    return ExitStatus(code=drained.exit_code, signal=drained.signal)


@dataclass(frozen=True)
class ProcessMeta:
    """What a session was started as."""

    process_id: int
    environment_id: str
    backend_process_id: str
    call_id: str
    argv: tuple[str, ...]
    tty: bool
    sandboxed: bool
    started_at_ms: int


class UnifiedProcess:
    """Owns its pump and exit-watch tasks; `terminate` ends them and the process group."""

    def __init__(
        self,
        meta: ProcessMeta,
        handle: ProcessHandle,
        clock: Callable[[], float],
        *,
        initial_seq: int = 0,
        initial_offset: int = 0,
    ):
        self.meta = meta
        self.handle = handle
        # Decided once: remote handles can be re-attached and released, local ones cannot.
        self._reattachable = handle if isinstance(handle, ReattachableHandle) else None
        # Until a drain says otherwise, a daemon's process is polled from its own capture.
        self._captured = handle if isinstance(handle, CapturedHandle) else None
        self.clock = clock
        self.last_used = clock()
        self.last_used_at_ms = meta.started_at_ms
        self.buffer = HeadTailBuffer()
        self.exit_status: ExitStatus | None = None
        self.closed = False
        self.listener: OutputListener | None = None
        # The attached call's pacing hook (set with `listener`): while its Execute client is
        # behind, the pump stops reading, so the process waits instead of the stream
        # dropping output. Between calls nobody is attached and the pump reads on into the
        # head/tail buffer (the session's retention).
        self.room: RoomCheck | None = None
        # Read-only watchers (the console): each gets its own bounded copy (output_tap.py).
        self._taps: set[OutputTap] = set()
        self._seq = initial_seq
        # Backend (daemon) seq of the last chunk pushed, and of the last one drained: a
        # re-attach from `drained_seq` replays exactly what no response has returned yet.
        self.backend_seq = initial_seq
        self.drained_seq = initial_seq
        # The same positions as daemon output offsets (bytes), to count eviction gaps.
        self.backend_offset = initial_offset
        self.drained_offset = initial_offset
        # The output offset a daemon drain returned through: the buffer here skips those
        # bytes when the stream delivers them later, so a fallback never repeats them.
        self._taken_offset = initial_offset
        # Every byte of the output since the start went through this buffer (a fresh start,
        # no eviction gap, no daemon drain yet): it then equals the daemon's capture.
        self._whole = initial_seq == 0 and initial_offset == 0
        # The seq through which a drain's answer is stored (the shared record's consumed
        # seq; then each later drain of this object): two-phase drains acknowledge it.
        self._stored_seq = initial_seq
        # Set on every state change (output, exit, close); waiters clear it before checking.
        self.changed = asyncio.Event()
        # Owned by this process object: `terminate`/`release` cancel and await them.
        self._tasks = [
            asyncio.create_task(self._pump(), name=f"unified-pump-{meta.process_id}"),
            asyncio.create_task(self._watch_exit(), name=f"unified-exit-{meta.process_id}"),
        ]

    @property
    def process_id(self) -> int:
        """The model-visible session id."""
        return self.meta.process_id

    @property
    def exited(self) -> bool:
        """The exit (or the environment's loss) is known."""
        return self.exit_status is not None

    @property
    def lost(self) -> str | None:
        """Why the environment was lost, if it was."""
        return None if self.exit_status is None else self.exit_status.environment_lost

    def touch(self) -> None:
        """Mark as used now (pruning order)."""
        self.last_used = self.clock()
        self.last_used_at_ms = int(time.time() * 1000)

    async def _pump(self) -> None:
        try:
            async for chunk in self.handle.output():
                self._seq += 1
                remote = self._reattachable
                self.backend_seq = remote.delivered_seq if remote else self._seq
                self.backend_offset = remote.delivered_offset if remote else 0
                self._capture(chunk)
                if self.listener is not None:
                    self.listener(chunk, self._seq)
                for tap in self._taps:
                    tap.push(chunk.data)
                self.changed.set()
                room = self.room
                if room is not None and not self.exited and (pause := room()) is not None:
                    # Never past the exit: a response reads only what arrives within a
                    # short grace after it, so the rest must drain at full speed.
                    await pause_until(pause, self._tasks[1])
        except Exception:
            # The output ends here either way (`closed`); the cause must not vanish.
            _log.exception("output pump of session %d failed", self.meta.process_id)
        finally:
            self.closed = True
            for tap in self._taps:
                tap.close()
            self.changed.set()

    def _capture(self, chunk: OutputChunk) -> None:
        data, lost = chunk.data, chunk.omitted_before
        if lost:
            self._whole = False
        if self._reattachable is not None and self.backend_offset:
            # Bytes (and gap bytes) a daemon drain already returned are not this buffer's.
            start = self.backend_offset - len(data)
            lost = max(0, min(lost, start - self._taken_offset))
            data = data[max(0, self._taken_offset - start) :]
        self.buffer.skip(lost)
        self.buffer.push(data)

    async def _watch_exit(self) -> None:
        try:
            status = await self.handle.wait()
        except Exception as exc:
            status = ExitStatus(environment_lost=str(exc) or type(exc).__name__)
        self.exit_status = status
        self.changed.set()

    def watch(self) -> OutputTap:
        """A read-only tap on the output from now on, starting with what the model has not
        polled yet (a copy: the buffer is not drained); end it with `unwatch`."""
        snapshot = self.buffer.snapshot()
        tap = OutputTap(snapshot.to_bytes())
        if self.closed:
            tap.close()
        else:
            self._taps.add(tap)
        return tap

    def unwatch(self, tap: OutputTap) -> None:
        """Detach a tap (its watcher left)."""
        self._taps.discard(tap)
        tap.close()

    async def wait_exit(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the exit; True when it is known."""
        deadline = self.clock() + timeout_s
        while not self.exited:
            remaining = deadline - self.clock()
            if remaining <= 0:
                return False
            self.changed.clear()
            if self.exited:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return True

    def drain(self) -> HeadTailSnapshot:
        """Output since the previous drain (each response sees only new output)."""
        self.drained_seq = self.backend_seq
        self.drained_offset = self.backend_offset
        return self.buffer.drain()

    async def take_output(self, *, shared: bool = True) -> HeadTailSnapshot:
        """Output no response has returned yet: the daemon's capture when it keeps one
        (the same text on every replica), else this router's buffer (`drain`).

        Not `shared` (no other router polls the session) and the stream brought every byte
        and the close: the buffer here is the daemon's capture byte for byte, so the answer
        skips the Drain round trip (the release at `terminate` tells the daemon).
        """
        captured = self._captured
        if captured is not None and not shared and self._whole and self.closed and (
            self.exit_status is not None and self.lost is None
        ):
            return self.drain()
        if captured is not None:
            try:
                # Shared: two-phase, so a router dying before its answer is stored loses
                # nothing (the daemon hands the held bytes to the next poll).
                drained = await captured.drain_capture(hold=shared, acknowledged=self._stored_seq)
            except Exception as exc:
                # The daemon cannot be asked now: what this router read is all there is.
                _log.warning("session %d: daemon drain failed: %s", self.process_id, exc)
                drained = None
            if drained is not None:
                return self._took(drained)
            # Nothing to take there (an older daemon, or it forgot the process): from now
            # on the buffer here is this session's capture.
            self._captured = None
        return self.drain()

    def _took(self, drained: DrainedCapture) -> HeadTailSnapshot:
        self.drained_seq, self.drained_offset = drained.through_seq, drained.through_offset
        # A later drain of this object comes after this answer was given.
        self._stored_seq = drained.through_seq
        self._whole = False
        self._taken_offset = max(self._taken_offset, drained.through_offset)
        # The buffer's copy of those bytes was returned by the daemon: start it over.
        self.buffer.drain()
        if drained.closed and self.exit_status is None:
            # The daemon saw the end and this drain holds the last output: report it now.
            self.exit_status = _drained_status(drained)
            self.changed.set()
        return drained.snapshot

    async def release(self) -> None:
        """Stop following a detached remote process without killing it."""
        if self._reattachable is None:
            await self.terminate()
            return
        with contextlib.suppress(Exception):
            await self._reattachable.release()
        await self._stop_tasks()

    async def terminate(self) -> None:
        """Kill the process group and stop the background tasks."""
        if self._captured is not None and self.exited and self.lost is None:
            # The exit was reported (or the session is dropped): the daemon may forget it
            # after its exited retention instead of waiting for a drain that never comes.
            self._captured.release_capture()
        with contextlib.suppress(Exception):
            await self.handle.terminate()
        await self._stop_tasks()

    async def _stop_tasks(self) -> None:
        await cancel_and_wait(*self._tasks, log=_log)
