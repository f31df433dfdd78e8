"""ExecService servicer: protobuf ↔ domain, authentication, and calls into the table."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from shellgate.common.auth import Authenticator
from shellgate.common.boundary import streaming, unary
from shellgate.common.enum_maps import SIGNALS, STREAMS
from shellgate.common.errors import (
    InvalidArgumentError,
    ProcessExitedError,
    SpawnError,
)
from shellgate.common.grpc import output_encoding as wire
from shellgate.common.grpc.batching import coalesced
from shellgate.common.process.retention import SeqChunk
from shellgate.common.tasks import TaskSet
from shellgate.common.tracing import span, span_event
from shellgate.execserver import convert, files, validate
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.confine import Confinement
from shellgate.execserver.follow import (
    Awaiting,
    Closed,
    Event,
    Exited,
    Gap,
    delivered_offset,
    follow,
)
from shellgate.execserver.info import HostInfo
from shellgate.execserver.managed import ManagedProcess, ProcessState
from shellgate.execserver.metrics import ExecServerMetrics
from shellgate.execserver.process_table import ProcessTable, StartSpec
from shellgate.execserver.reads import read_retained
from shellgate.execserver.start_spec import build_start_spec
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import exec_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)
Ctx = Any  # grpc.aio.ServicerContext


def _wire_event(event: Event) -> bytes:
    """One Start/Attach response as wire bytes (the two messages share their encoding).

    Output, nearly every message of a stream, is encoded by hand with a single copy of its
    data (shellgate.common.grpc.output_encoding); the rare other events go through protobuf.
    """
    if type(event) is SeqChunk:
        return wire.output_event(event.seq, STREAMS[event.stream], event.data, event.end)
    return pb.StartResponse(event=_event_pb(event)).SerializeToString()


def _event_pb(event: Event) -> pb.ProcessEvent:
    if isinstance(event, SeqChunk):
        out = pb.ProcessEvent()
        convert.fill_chunk_pb(out.output, event)
        return out
    if isinstance(event, Exited):
        if event.status.environment_lost is not None:
            # The backend lost the process (e.g. its SSH connection dropped): its fate is
            # unknown, so the caller gets `lost`, never a made-up exit code.
            lost = pb.ProcessLost(reason=event.status.environment_lost, last_seq=event.seq - 1)
            return pb.ProcessEvent(lost=lost)
        status = convert.exit_status_pb(event.status, event.timed_out)
        exited = pb.ProcessExited(
            seq=event.seq, status=status, sandbox_denied=event.sandbox_denied
        )
        return pb.ProcessEvent(exited=exited)
    if isinstance(event, Closed):
        closed = pb.ProcessClosed(seq=event.seq, sandbox_denied=event.sandbox_denied)
        return pb.ProcessEvent(closed=closed)
    if isinstance(event, Gap):
        reason = pb.GAP_REASON_SLOW_CONSUMER if event.slow_consumer else pb.GAP_REASON_EVICTED
        gap = pb.OutputGap(first_seq=event.first, last_seq=event.last, reason=reason)
        return pb.ProcessEvent(gap=gap)
    assert isinstance(event, Awaiting)
    return pb.ProcessEvent(awaiting_input=pb.AwaitingInput(last_seq=event.last_seq))


def _confinement(request: Any) -> Confinement | None:
    """The write confinement a mutating file request carries (None without a sandbox)."""
    if not request.HasField("sandbox"):
        return None
    return Confinement.from_spec(convert.sandbox_from_pb(request.sandbox))


class ExecServicer(pb_grpc.ExecServiceServicer):  # type: ignore[misc]
    """Serves ExecService over one process table and one host."""

    def __init__(
        self, config: ServerConfig, table: ProcessTable, host: HostInfo, auth: Authenticator
    ) -> None:
        self._config = config
        self._table = table
        self.metrics = ExecServerMetrics(table.running)
        # The boundary (shellgate.common.boundary) counts every error status here.
        self.on_rpc_error = self.metrics.rpc_rejected
        self._host = host
        self._auth = auth
        # Cleanup that must survive the cancellation of the RPC that triggered it (owned
        # here, joined by drain_background at shutdown; a failure is logged).
        self._background = TaskSet(log)

    def _caller(self, context: Ctx) -> str:
        if self._auth.open:
            return self._auth.authenticate({}, {})
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        identity = context.auth_context() or {}
        return self._auth.authenticate(metadata, identity)

    def _get(self, context: Ctx, process_id: str) -> ManagedProcess:
        return self._table.get(self._caller(context), process_id)

    @unary
    async def GetInfo(self, request: pb.GetInfoRequest, context: Ctx) -> pb.GetInfoResponse:
        """Host facts."""
        return convert.host_info_pb(self._host, self._config, self._caller(context))

    def _spec(self, request: pb.StartRequest, caller: str) -> StartSpec:
        order = convert.start_order_from_pb(request)
        return build_start_spec(
            order, caller, host=self._host, config=self._config, daemon_env=os.environ
        )

    @streaming
    async def Start(
        self, request: pb.StartRequest, context: Ctx
    ) -> AsyncGenerator[pb.StartResponse | bytes, None]:
        """Spawn and stream started, output, exited, closed (events as wire bytes)."""
        # A child of the router's span when its trace context came in the metadata.
        with span("shellgate.execserver.start", metadata=context.invocation_metadata()) as trace:
            replies = self._start(request, context, trace)
            if not request.coalesce_ms:
                async for reply in replies:
                    yield reply
                return

            async def marked() -> AsyncIterator[tuple[bytes, bool]]:
                # Nothing is urgent: the stream's end sends what is held at once.
                async for reply in replies:
                    yield wire.serialize_response(reply), False

            async for message in coalesced(marked(), request.coalesce_ms, wire.start_batch):
                yield message

    async def _start(
        self, request: pb.StartRequest, context: Ctx, trace: Any
    ) -> AsyncIterator[pb.StartResponse | bytes]:
        spec = self._spec(request, self._caller(context))
        metrics, began = self.metrics, time.monotonic()
        try:
            proc, reused = await self._table.start(spec)
        except SpawnError as exc:
            metrics.spawns.labels("spawn_failed").inc()
            span_event(trace, "spawn_failed")
            failed = pb.SpawnFailed(errno=exc.errno or 0, message=exc.message)
            yield pb.StartResponse(event=pb.ProcessEvent(spawn_failed=failed))
            return
        # Paced from the first byte: registered before the pump task gets to run.
        pacer = None if reused else proc.add_pacer()
        started = pb.ProcessStarted(
            process_id=proc.process_id,
            pid=proc.handle.pgid or 0,
            sandboxed=proc.sandboxed,
            reused=reused,
        )
        metrics.spawns.labels("reused" if reused else "started").inc()
        if not reused:
            metrics.spawn_seconds.observe(time.monotonic() - began)
        span_event(trace, "spawned", {"reused": reused})
        completed = False
        first_byte = False
        try:
            yield pb.StartResponse(event=pb.ProcessEvent(started=started))
            async for event in follow(proc, 0, pacer=pacer):
                if type(event) is SeqChunk and event.data:
                    if not first_byte:
                        first_byte = True
                        metrics.first_byte_seconds.observe(time.monotonic() - began)
                        span_event(trace, "first_byte")
                    metrics.output_bytes.inc(len(event.data))
                yield _wire_event(event)
            span_event(trace, "exited")
            completed = True
        finally:
            if pacer is not None:
                proc.remove_pacer(pacer)
            if not completed and not proc.detached and not reused:
                # The stream ended early (client gone): a classic command dies with it.
                self._spawn_cleanup(proc)

    def _spawn_cleanup(self, proc: ManagedProcess) -> None:
        self._background.spawn(proc.terminate_quietly(), name=f"cleanup-{proc.process_id}")

    async def drain_background(self) -> None:
        """Wait for cleanup tasks (shutdown)."""
        await self._background.join()

    @streaming
    async def Attach(
        self, request: pb.AttachRequest, context: Ctx
    ) -> AsyncGenerator[bytes, None]:
        """Replay retained events after after_seq, then follow until closed (wire bytes)."""
        proc = self._get(context, request.process_id)
        proc.touch()
        # Attached: paced like Start from the first event it has not seen, so a slow reader
        # holds the process back instead of losing output (what was evicted before it
        # attached still arrives as a gap).
        pacer = proc.add_pacer(delivered_offset(proc, request.after_seq))
        try:
            async for event in follow(proc, request.after_seq, pacer=pacer):
                yield _wire_event(event)
        finally:
            proc.remove_pacer(pacer)

    @unary
    async def Read(self, request: pb.ReadRequest, context: Ctx) -> pb.ReadResponse:
        """Catch up by seq, long-polling up to wait_ms."""
        proc = self._get(context, request.process_id)
        proc.touch()
        max_bytes = request.max_bytes if request.HasField("max_bytes") else None
        if (max_bytes is not None and max_bytes > self._config.max_read_bytes) or max_bytes is None:
            max_bytes = self._config.max_read_bytes
        wait_ms = min(request.wait_ms, self._config.max_read_wait_ms)
        result = await read_retained(proc, request.after_seq, max_bytes, wait_ms)
        reply = pb.ReadResponse(
            next_seq=result.next_seq,
            exited=proc.exited,
            closed=proc.closed,
            failure=proc.failure,
            sandbox_denied=proc.sandbox_denied,
        )
        for chunk in result.chunks:
            convert.fill_chunk_pb(reply.chunks.add(), chunk)
        status = proc.exit_status()
        if status is not None:
            reply.exit_status.CopyFrom(convert.exit_status_pb(status, proc.timed_out))
        return reply

    @unary
    async def Write(self, request: pb.WriteRequest, context: Ctx) -> pb.WriteResponse:
        """Write stdin bytes."""
        proc = self._get(context, request.process_id)
        if len(request.data) > self._config.max_write_bytes:
            raise InvalidArgumentError(
                f"data is larger than {self._config.max_write_bytes} bytes",
                limit="max_write_bytes",
            )
        proc.touch()
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.write(request.data)
        proc.note_input()
        return pb.WriteResponse(accepted_bytes=len(request.data))

    @unary
    async def CloseStdin(
        self, request: pb.CloseStdinRequest, context: Ctx
    ) -> pb.CloseStdinResponse:
        """EOF on stdin."""
        proc = self._get(context, request.process_id)
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.close_stdin()
        return pb.CloseStdinResponse()

    @unary
    async def Signal(self, request: pb.SignalRequest, context: Ctx) -> pb.SignalResponse:
        """Signal the process group."""
        proc = self._get(context, request.process_id)
        sig = SIGNALS.domain(request.signal)
        if sig is None:
            raise InvalidArgumentError("signal must be given")
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.signal(sig)
        return pb.SignalResponse()

    @unary
    async def Resize(self, request: pb.ResizeRequest, context: Ctx) -> pb.ResizeResponse:
        """Resize the PTY."""
        proc = self._get(context, request.process_id)
        validate.check_size(request.rows, request.cols, self._config, allow_zero=False)
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.resize(request.rows, request.cols)
        return pb.ResizeResponse()

    @unary
    async def Terminate(
        self, request: pb.TerminateRequest, context: Ctx
    ) -> pb.TerminateResponse:
        """Kill the group; running=False when it had already exited."""
        proc = self._get(context, request.process_id)
        return pb.TerminateResponse(running=await proc.terminate())

    @unary
    async def List(self, request: pb.ListRequest, context: Ctx) -> pb.ListResponse:
        """The caller's processes."""
        caller = self._caller(context)
        reply = pb.ListResponse()
        for proc in self._table.list(caller, request.owner):
            state = await asyncio.to_thread(proc.state)
            info = pb.ProcessInfo(
                process_id=proc.process_id,
                owner=proc.owner,
                argv=list(proc.request.argv),
                cwd=proc.request.cwd,
                pid=proc.handle.pgid or 0,
                state=convert.STATES[state],
                tty=proc.request.tty,
                detached=proc.detached,
                next_seq=proc.retention.next_seq,
                started_at_ms=proc.started_at_ms,
                last_activity_ms=proc.last_activity_ms,
            )
            status = proc.exit_status()
            if status is not None:
                info.exit_status.CopyFrom(convert.exit_status_pb(status, proc.timed_out))
            reply.processes.append(info)
        return reply

    @unary
    async def ReadFile(self, request: pb.ReadFileRequest, context: Ctx) -> pb.ReadFileResponse:
        """Read a file (a sandbox does not confine reads: the whole filesystem is readable)."""
        self._caller(context)
        data = await asyncio.to_thread(
            files.read_file, request.path, self._config.max_file_bytes
        )
        return pb.ReadFileResponse(data=data)

    @unary
    async def WriteFile(
        self, request: pb.WriteFileRequest, context: Ctx
    ) -> pb.WriteFileResponse:
        """Write a file atomically."""
        self._caller(context)
        if len(request.data) > self._config.max_file_bytes:
            raise InvalidArgumentError(
                f"data is larger than {self._config.max_file_bytes} bytes", limit="max_file_bytes"
            )
        mode = request.mode if request.HasField("mode") else None
        await asyncio.to_thread(
            files.write_file,
            request.path,
            request.data,
            mode,
            request.create_parents,
            _confinement(request),
        )
        return pb.WriteFileResponse()

    @unary
    async def Remove(self, request: pb.RemoveRequest, context: Ctx) -> pb.RemoveResponse:
        """Remove a path."""
        self._caller(context)
        await asyncio.to_thread(
            files.remove, request.path, request.recursive, request.missing_ok,
            _confinement(request),
        )
        return pb.RemoveResponse()

    @unary
    async def Rename(self, request: pb.RenameRequest, context: Ctx) -> pb.RenameResponse:
        """Rename a path."""
        self._caller(context)
        await asyncio.to_thread(
            files.rename, request.from_path, request.to_path, request.create_parents,
            _confinement(request),
        )
        return pb.RenameResponse()

    @unary
    async def Stat(self, request: pb.StatRequest, context: Ctx) -> pb.StatResponse:
        """Path metadata (not confined by a sandbox, like ReadFile)."""
        self._caller(context)
        st = await asyncio.to_thread(
            files.stat_path, request.path, request.follow_symlinks
        )
        # An SSH backend's processes start on another host: this host's inode means nothing.
        return convert.stat_pb(st, with_identity=self._host.backend == "local")

    @unary
    async def MakeDirectory(
        self, request: pb.MakeDirectoryRequest, context: Ctx
    ) -> pb.MakeDirectoryResponse:
        """Create a directory."""
        self._caller(context)
        await asyncio.to_thread(
            files.make_directory, request.path, request.parents, _confinement(request)
        )
        return pb.MakeDirectoryResponse()


__all__ = ["ExecServicer", "ProcessState"]
