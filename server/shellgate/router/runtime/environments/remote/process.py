"""One process on an exec-server daemon as a ProcessHandle: a Start (or Attach) stream read
into a bounded channel, unary calls for stdin, signals and resize (spec 06 §5, §9)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
from shellgate.common.enum_maps import SIGNALS, STREAMS
from shellgate.common.errors import FailedPreconditionError, NotFoundError, ProcessExitedError
from shellgate.common.grpc.status import error_from_status
from shellgate.common.head_tail import DrainedCapture, HeadTailSnapshot
from shellgate.common.output_channel import OutputChannel
from shellgate.common.process.base import ExitStatus, OutputChunk, Signal, Stream
from shellgate.common.tasks import cancel_and_wait
from shellgate.v1 import exec_pb2

if TYPE_CHECKING:
    from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment

# grpc.aio.EOF is missing from the type stubs.
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]

__all__ = ["RemoteProcess"]

_log = logging.getLogger(__name__)


def exit_status_of(pb: exec_pb2.ExitStatus) -> ExitStatus:
    """The domain exit status of a daemon's ExitStatus message."""
    if pb.WhichOneof("status") == "signal":
        return ExitStatus(signal=pb.signal)
    return ExitStatus(code=pb.code)


def _lost_reason(exc: grpc.aio.AioRpcError) -> str:
    return f"exec-server connection lost: {exc.details() or exc.code().name}"


class RemoteProcess:
    """A ProcessHandle over one Start stream; stream loss → ExitStatus(environment_lost)."""

    def __init__(
        self,
        env: RemoteEnvironment,
        call: Any,
        process_id: str,
        pid: int | None,
        *,
        after_seq: int = 0,
        after_offset: int = 0,
        pending: tuple[exec_pb2.ProcessEvent, ...] = (),
    ) -> None:
        self._env = env
        self._call = call
        self.process_id = process_id
        self._pid = pid
        # Bounded (back-pressure): while the consumer of output() lags by the buffer, the
        # reader waits instead of reading on, and gRPC flow control makes the daemon's Start
        # stream wait in turn. The exit arrives in-band after the output, so wait() needs
        # output() to be consumed (every router consumer is; terminate() discards).
        # Each entry carries its stream, daemon seq, end offset and the bytes lost before it.
        self._output: OutputChannel[tuple[Stream, int, int, int]] = OutputChannel(
            max_bytes=env.config.output_buffer_bytes
        )
        # The daemon seq and output offset of the last chunk handed out by output(): a
        # re-attach from them replays exactly what the consumer has not seen (spec 06 §9),
        # and the offset lets it count the bytes an eviction gap lost.
        self.delivered_seq = after_seq
        self.delivered_offset = after_offset
        self._received_offset = after_offset
        self._exit: asyncio.Future[ExitStatus] = asyncio.get_running_loop().create_future()
        # Events that came in the same message as `started` (a coalesced Start stream).
        self._pending = pending
        # Owned by this handle: release() and terminate() cancel and await it.
        self._reader = asyncio.create_task(self._read(), name=f"remote-read-{process_id}")

    @property
    def pid(self) -> int | None:
        """The daemon host's pid (not signalable from here)."""
        return self._pid

    @property
    def pgid(self) -> int | None:
        """Not observable remotely."""
        return None

    def _set_exit(self, status: ExitStatus) -> None:
        if not self._exit.done():
            self._exit.set_result(status)

    async def _read(self) -> None:
        try:
            for event in self._pending:
                if await self._handle(event):
                    return
            while True:
                # read() only: grpc.aio forbids mixing it with async iteration, and the
                # first event was already read with it.
                message = await self._call.read()
                if message is _EOF:
                    if not self._exit.done():
                        self._set_exit(
                            ExitStatus(environment_lost="exec-server stream ended early")
                        )
                    break
                if await self._handle(message.event):
                    break
                # A coalesced Start stream's later events in the same message (an
                # AttachResponse has no `more`: reading it raised, and a re-attached
                # session never saw its exit).
                for event in getattr(message, "more", ()):
                    if await self._handle(event):
                        return
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                # Re-attach to a process the daemon no longer keeps: the daemon is fine.
                self._set_exit(ExitStatus(environment_lost=f"process {self.process_id} is gone"))
            elif exc.code() != grpc.StatusCode.CANCELLED or not self._exit.done():
                self._env.mark_unreachable(_lost_reason(exc))
                self._set_exit(ExitStatus(environment_lost=_lost_reason(exc)))
        except asyncio.CancelledError:
            self._set_exit(ExitStatus(environment_lost="exec-server stream cancelled"))
            raise
        finally:
            self._output.close()

    async def _handle(self, event: exec_pb2.ProcessEvent) -> bool:
        """Apply one daemon event; True when the stream is over (closed, lost)."""
        kind = event.WhichOneof("event")
        if kind == "output":
            out = event.output
            stream = STREAMS.domain(out.stream) or Stream.STDOUT
            omitted = self._omitted_before(out.end_offset, len(out.data))
            await self._output.send((stream, out.seq, out.end_offset, omitted), out.data)
        elif kind == "exited":
            self._set_exit(exit_status_of(event.exited.status))
        elif kind == "closed":
            return True
        elif kind == "lost":
            self._set_exit(ExitStatus(environment_lost=event.lost.reason))
            return True
        return False

    def _omitted_before(self, end_offset: int, size: int) -> int:
        """Bytes the daemon evicted between the previous chunk and this one (an `OutputGap`
        names the seqs; the offsets count the bytes). 0 from a daemon without offsets."""
        if not end_offset:
            return 0
        lost = max(0, end_offset - size - self._received_offset)
        self._received_offset = end_offset
        return lost

    @property
    def buffered_bytes(self) -> int:
        """Output received from the daemon that output() has not handed out yet."""
        return self._output.queued_bytes

    async def output(self) -> AsyncIterator[OutputChunk]:
        """Output chunks until the process closed (or the stream was lost)."""
        async for item in self._output:
            stream, self.delivered_seq, end_offset, omitted = item.meta
            if end_offset:
                self.delivered_offset = end_offset
            yield OutputChunk(stream, item.data, omitted)

    async def _unary(self, method: str, request: Any) -> Any:
        try:
            return await self._env.call(method, request)
        except grpc.aio.AioRpcError as exc:
            # The daemon's reason picks the class: ProcessExitedError, StdinClosedError,
            # NotATtyError (FAILED_PRECONDITION); anything else stays the RPC error.
            error = error_from_status(exc)
            if isinstance(error, NotFoundError):
                # The daemon no longer keeps the process: to this handle it has exited.
                raise ProcessExitedError(error.message or "unknown process") from exc
            if isinstance(error, FailedPreconditionError):
                raise error from exc
            raise

    async def drain_capture(
        self, *, release: bool = False, hold: bool = False, acknowledged: int = 0
    ) -> DrainedCapture | None:
        """Take the session's capture on the daemon (SessionOutputService.Drain; `release`:
        the session's end was reported, the daemon may forget it).

        None when there is none to take: a daemon without the service (UNIMPLEMENTED), a
        process started without one, or one the daemon no longer keeps (NOT_FOUND); the
        caller then uses the output it read itself. Other RPC errors propagate.
        """
        try:
            reply = await self._env.drain_session(
                self.process_id, release=release, hold=hold, acknowledged=acknowledged
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.NOT_FOUND):
                return None
            raise
        if not reply.captured:
            return None
        status = reply.exit_status if reply.HasField("exit_status") else None
        kind = status.WhichOneof("status") if status is not None else None
        return DrainedCapture(
            snapshot=HeadTailSnapshot(reply.head, reply.tail, reply.omitted_bytes),
            through_seq=reply.through_seq,
            through_offset=reply.through_offset,
            exit_code=status.code if status is not None and kind == "code" else None,
            signal=status.signal if status is not None and kind == "signal" else None,
            failure=reply.failure,
            exited=reply.exited,
            closed=reply.closed,
        )

    def release_capture(self) -> None:
        """The session's end was reported: the daemon is told in the background."""
        self._env.release_session(self.process_id)

    async def write(self, data: bytes) -> None:
        """Write to the remote stdin/PTY."""
        await self._unary("Write", exec_pb2.WriteRequest(process_id=self.process_id, data=data))

    async def close_stdin(self) -> None:
        """EOF on the remote stdin."""
        await self._unary("CloseStdin", exec_pb2.CloseStdinRequest(process_id=self.process_id))

    async def resize(self, rows: int, cols: int) -> None:
        """Resize the remote PTY."""
        await self._unary(
            "Resize", exec_pb2.ResizeRequest(process_id=self.process_id, rows=rows, cols=cols)
        )

    async def signal(self, sig: Signal) -> None:
        """Signal the remote process group."""
        await self._unary(
            "Signal", exec_pb2.SignalRequest(process_id=self.process_id, signal=SIGNALS[sig])
        )

    async def wait(self) -> ExitStatus:
        """The exit status (or the loss of the environment)."""
        return await asyncio.shield(self._exit)

    async def release(self) -> None:
        """Drop the stream, leaving a detached process running on the daemon."""
        self._call.cancel()
        await cancel_and_wait(self._reader, log=_log)

    async def terminate(self) -> None:
        """Kill the remote group, then drop the stream."""
        if not self._exit.done():
            # Nobody wants the output of a killed process, and the consumer may be gone
            # already (a cancelled classic pump): discard it, so the reader never waits
            # for room and reaches the exit event.
            self._output.abandon()
            with contextlib.suppress(Exception):
                await self._unary(
                    "Terminate", exec_pb2.TerminateRequest(process_id=self.process_id)
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wait(), self._env.config.dial.call_timeout_ms / 1000)
        self._call.cancel()
        await cancel_and_wait(self._reader, log=_log)
