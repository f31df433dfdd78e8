"""SessionOutputService: a unified-exec session's head/tail capture, drained once, here.

Why the daemon keeps it (and not the router replica that happens to poll): the daemon's pump
is the only writer that sees every byte of a process, while routers attach and let go
between polls and retention evicts what nobody followed. One writer (the pump) and an
atomic take (`ManagedProcess.drain_capture`, synchronous on the loop) make the text each
poll returns a function of the output alone: identical on every replica, after a replica
is SIGKILLed mid-poll (its capture stays here; the next poll takes it), and split without
loss or overlap between concurrent polls on any mix of replicas. A store of the buffer
in Redis would need a single writer following each session all the time, and a replica
that dies loses what it had not written back.

Two-phase (`hold`): routers sharing sessions keep each Drain here until the next poll
acknowledges it with the seq their shared record stored, so a replica SIGKILLed between the
Drain and storing its answer loses nothing: the next poll gets those bytes again, first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shellgate.common.boundary import unary
from shellgate.execserver import convert
from shellgate.execserver.managed import ManagedProcess
from shellgate.v1 import session_output_pb2 as pb
from shellgate.v1 import session_output_pb2_grpc as pb_grpc

__all__ = ["SERVICE_NAME", "SessionOutputServicer", "add_session_output_service"]

SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["SessionOutputService"].full_name
Ctx = Any  # grpc.aio.ServicerContext


def drain_pb(
    proc: ManagedProcess, *, release: bool = False, hold: bool = False, acknowledged: int = 0
) -> pb.DrainResponse:
    """One Drain answer: the capture taken now, with the state it was taken in."""
    drained = proc.drain_capture(release=release, hold=hold, acknowledged=acknowledged)
    if drained is None:
        return pb.DrainResponse(captured=False)
    snap = drained.snapshot
    reply = pb.DrainResponse(
        captured=True,
        head=snap.head,
        tail=snap.tail,
        omitted_bytes=snap.omitted_bytes,
        through_seq=drained.through_seq,
        through_offset=drained.through_offset,
        exited=proc.exited,
        closed=drained.closed,
        failure=proc.failure,
    )
    status = proc.exit_status()
    if status is not None:
        reply.exit_status.CopyFrom(convert.exit_status_pb(status, proc.timed_out))
    return reply


class SessionOutputServicer(pb_grpc.SessionOutputServiceServicer):  # type: ignore[misc]
    """Drain over the ExecService's table, as its caller (`lookup` authenticates)."""

    def __init__(
        self,
        lookup: Callable[[Ctx, str], ManagedProcess],
        on_rpc_error: Callable[[str], None] | None = None,
    ) -> None:
        # `lookup(context, process_id)`: the caller's process (ExecServicer's own check).
        self._lookup = lookup
        # The boundary counts this service's error statuses with ExecService's.
        self.on_rpc_error = on_rpc_error

    @unary
    async def Drain(self, request: pb.DrainRequest, context: Ctx) -> pb.DrainResponse:
        """Take the session's capture."""
        return drain_pb(
            self._lookup(context, request.process_id), release=request.release,
            hold=request.hold, acknowledged=request.acknowledged_through_seq,
        )  # fmt: skip


def add_session_output_service(servicer: SessionOutputServicer, server: Any) -> None:
    """Register the service on a grpc.aio server."""
    pb_grpc.add_SessionOutputServiceServicer_to_server(servicer, server)
