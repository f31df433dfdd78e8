"""Execute events and environment statuses on the wire (domain → protobuf, nothing else)."""

from __future__ import annotations

from shellgate.common.enum_maps import SHELL_TYPES, STREAMS
from shellgate.common.grpc.output_encoding import chunk_message, varint
from shellgate.router.projection import ProjectionMemo
from shellgate.router.runtime.call.events import (
    ApprovalDecision,
    ApprovalKind,
    ApprovalPendingEvent,
    ApprovalRequiredEvent,
    ApprovalWaitingEvent,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    ProjectionEvent,
    StartedEvent,
    TerminalInteractionEvent,
)
from shellgate.router.runtime.environments.registry import EnvironmentStatus
from shellgate.router.runtime.environments.remote.info import EnvironmentInfo, ExecBackend
from shellgate.router.service.wire.projection import element_pb, fill_projection
from shellgate.v1 import exec_pb2, router_pb2

DECISIONS = {
    router_pb2.APPROVAL_DECISION_APPROVED: ApprovalDecision.APPROVED,
    router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION: ApprovalDecision.APPROVED_FOR_SESSION,
    router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT: ApprovalDecision.APPROVED_WITH_AMENDMENT,
    router_pb2.APPROVAL_DECISION_DENIED: ApprovalDecision.DENIED,
    router_pb2.APPROVAL_DECISION_ABORT: ApprovalDecision.ABORT,
}
_DECISIONS_PB = {v: k for k, v in DECISIONS.items()}
_KINDS = {
    ApprovalKind.EXEC_POLICY: router_pb2.APPROVAL_KIND_EXEC_POLICY,
    ApprovalKind.SANDBOX_RETRY: router_pb2.APPROVAL_KIND_SANDBOX_RETRY,
    ApprovalKind.APPLY_PATCH: router_pb2.APPROVAL_KIND_APPLY_PATCH,
    ApprovalKind.NETWORK: router_pb2.APPROVAL_KIND_NETWORK,
}
_BACKENDS = {
    ExecBackend.LOCAL: exec_pb2.EXEC_BACKEND_LOCAL,
    ExecBackend.SSH: exec_pb2.EXEC_BACKEND_SSH,
}


def _fill_info(out: exec_pb2.GetInfoResponse, info: EnvironmentInfo) -> None:
    """The daemon's GetInfo answer as it arrived (the parts it sent, and only those)."""
    if info.shell is not None:
        shell = out.shell
        shell.SetInParent()
        if info.shell.type is not None:
            shell.type = SHELL_TYPES[info.shell.type.value]
        shell.path = info.shell.path
    out.cwd, out.os, out.arch = info.cwd, info.os, info.arch
    out.hostname, out.user, out.home = info.hostname, info.user, info.home
    if info.backend is not None:
        out.backend = _BACKENDS[info.backend]
    caps = info.capabilities
    if caps is not None:
        out.capabilities.SetInParent()
        out.capabilities.pty, out.capabilities.signals = caps.pty, caps.signals
        out.capabilities.sandbox = caps.sandbox
        out.capabilities.sandbox_unavailable_reason = caps.sandbox_unavailable_reason
    out.version = info.version
    limits = info.limits
    if limits is not None:
        pb = out.limits
        pb.SetInParent()
        pb.retained_output_bytes = limits.retained_output_bytes
        pb.exited_retention_ms = limits.exited_retention_ms
        pb.default_owner_ttl_ms = limits.default_owner_ttl_ms
        pb.request_id_ttl_ms = limits.request_id_ttl_ms
        pb.max_processes = limits.max_processes
        pb.max_file_bytes = limits.max_file_bytes
        pb.max_chunk_bytes = limits.max_chunk_bytes
        pb.max_message_bytes = limits.max_message_bytes
        pb.max_wait_ms = limits.max_wait_ms
    out.caller = info.caller


def status_pb(status: EnvironmentStatus) -> router_pb2.EnvironmentStatus:
    """One environment's status on the wire."""
    out = router_pb2.EnvironmentStatus(
        environment_id=status.environment_id,
        remote=status.remote,
        target=status.target,
        reachable=status.reachable,
        last_error=status.last_error,
    )
    if status.info is not None:
        out.info.SetInParent()
        _fill_info(out.info, status.info)
    return out


# ExecuteResponse.output = 4; ExecutionOutput: element_index = 1, stream = 2, seq = 3,
# data = 4 (tags: field number << 3 | wire type).
_OUTPUT_PATH = (b"\x22",)
_TAG_ELEMENT, _TAG_STREAM, _TAG_SEQ, _TAG_DATA = b"\x08", b"\x10", b"\x18", b"\x22"


def output_event_bytes(event: OutputEvent) -> bytes:
    """A serialized ExecuteResponse carrying one output chunk."""
    fields = (
        (_TAG_ELEMENT, event.element_index),
        (_TAG_STREAM, STREAMS[event.stream]),
        (_TAG_SEQ, event.seq),
    )
    return chunk_message(_OUTPUT_PATH, fields, _TAG_DATA, event.data)


# ExecuteBatch.events = 1; ExecuteResponse.batch = 9 (both length-delimited).
_TAG_BATCH_EVENTS = b"\x0a"
_TAG_BATCH = b"\x4a"


def reply_bytes(reply: router_pb2.ExecuteResponse | bytes) -> bytes:
    """One Execute reply serialized (hand-encoded output chunks already are)."""
    if type(reply) is bytes:
        return reply
    assert isinstance(reply, router_pb2.ExecuteResponse)
    data: bytes = reply.SerializeToString()
    return data


def batch_body(replies: list[bytes]) -> bytes:
    """A serialized ExecuteBatch of serialized ExecuteResponses (also an ExecuteOnceResponse:
    the same field)."""
    return b"".join(_TAG_BATCH_EVENTS + varint(len(r)) + r for r in replies)


def batch_response(replies: list[bytes]) -> bytes:
    """A serialized ExecuteResponse whose `batch` holds `replies` (a coalesced stream)."""
    body = batch_body(replies)
    return _TAG_BATCH + varint(len(body)) + body


def sent_at_once(event: ExecuteEvent) -> bool:
    """Whether a coalesced stream sends this event without waiting for its window: the end
    of the call, and approvals a person or the caller must see now."""
    return isinstance(
        event, CompletedEvent | ApprovalRequiredEvent | ApprovalPendingEvent | ApprovalWaitingEvent
    )


def in_execute_once(event: ExecuteEvent) -> bool:
    """Whether ExecuteOnce's reply carries this event: not the streamed output (the
    `completed` text holds it) nor an operator wait's keepalives."""
    return not isinstance(event, OutputEvent | ApprovalWaitingEvent)


def event_pb(
    event: ExecuteEvent, memo: ProjectionMemo | None = None
) -> router_pb2.ExecuteResponse | bytes:
    """One domain event of Execute on the wire (output chunks already serialized).

    `memo`: the router's projection memo, for the projection and approval events.
    """
    if isinstance(event, ProjectionEvent):
        response = router_pb2.ExecuteResponse()
        # Filled in place: a built Projection handed to the response would be copied.
        fill_projection(response.projection, event.projected, memo)
        return response
    if isinstance(event, OutputEvent):
        # Encoded by hand (the bytes protobuf would write, one copy of the data): the
        # field set plus SerializeToString copied each chunk twice.
        return output_event_bytes(event)
    if isinstance(event, StartedEvent):
        started = router_pb2.ExecutionStarted(
            element_index=event.element_index,
            environment_id=event.environment_id,
            process_id=event.process_id,
            sandboxed=event.sandboxed,
        )
        if event.pid is not None:
            started.pid = event.pid
        if event.session_id is not None:
            started.session_id = event.session_id
        return router_pb2.ExecuteResponse(started=started)
    if isinstance(event, TerminalInteractionEvent):
        return router_pb2.ExecuteResponse(
            terminal_interaction=router_pb2.TerminalInteraction(
                session_id=event.session_id, stdin=event.stdin
            )
        )
    if isinstance(event, ApprovalRequiredEvent):
        return router_pb2.ExecuteResponse(approval_required=_approval_pb(event, memo))
    if isinstance(event, ApprovalPendingEvent):
        pending = router_pb2.ApprovalPending(
            approval_id=event.details.approval_id,
            details=_approval_pb(event.details, memo),
            deadline_unix_ms=event.deadline_ms,
            caller_decides=event.caller_decides,
        )
        return router_pb2.ExecuteResponse(approval_pending=pending)
    if isinstance(event, ApprovalWaitingEvent):
        waiting = router_pb2.ApprovalWaiting(
            approval_id=event.approval_id, remaining_ms=event.remaining_ms
        )
        return router_pb2.ExecuteResponse(approval_waiting=waiting)
    assert isinstance(event, CompletedEvent)
    return router_pb2.ExecuteResponse(completed=completed_pb(event))


def _approval_pb(
    e: ApprovalRequiredEvent, memo: ProjectionMemo | None
) -> router_pb2.ApprovalRequired:
    out = router_pb2.ApprovalRequired(
        approval_id=e.approval_id,
        call_id=e.call_id,
        kind=_KINDS[e.kind],
        element_index=e.element_index,
        argv=list(e.argv),
        cwd=e.cwd,
        environment_id=e.environment_id,
        reason=e.reason,
        approval_key_digest=e.approval_key_digest,
        available_decisions=[_DECISIONS_PB[d] for d in e.available_decisions],
        expires_in_ms=e.expires_in_ms,
    )
    if e.proposed_amendment is not None:
        out.proposed_amendment.prefix.extend(e.proposed_amendment)
    if e.element is not None:
        out.element.CopyFrom(element_pb(e.element, memo))
    if e.network is not None:
        out.network_approval_context.CopyFrom(router_pb2.NetworkApprovalContext(
            host=e.network.host, protocol=e.network.protocol, port=e.network.port
        ))  # fmt: skip
    return out


def _termination(e: CompletedEvent) -> router_pb2.TerminationReason:
    name = e.termination.name
    return router_pb2.TerminationReason.Value(  # type: ignore[return-value]
        "TERMINATION_REASON_UNSPECIFIED" if name == "NONE" else f"TERMINATION_REASON_{name}"
    )


def completed_pb(e: CompletedEvent) -> router_pb2.ExecutionCompleted:
    """The final event of a call on the wire."""
    out = router_pb2.ExecutionCompleted(
        output_item_json=e.output_item_json,
        output_text=e.output_text,
        success=e.success,
        wall_time_ms=e.wall_time_ms,
        truncated=e.truncated,
        termination=_termination(e),
        model_warnings=list(e.model_warnings),
        reason=e.reason,
    )
    if e.exit_code is not None:
        out.exit_code = e.exit_code
    if e.session_id is not None:
        out.session_id = e.session_id
    if e.original_token_count is not None:
        out.original_token_count = e.original_token_count
    return out
