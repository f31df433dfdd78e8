"""Typed Execute events and the enums a harness reads from them."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field, replace
from typing import Any

from shellgate.v1 import exec_pb2, projection_pb2, router_pb2

__all__ = [
    "ApprovalKind",
    "ApprovalPending",
    "ApprovalRequired",
    "ApprovalWaiting",
    "Completed",
    "Decision",
    "Event",
    "Output",
    "ProjectionEvent",
    "Started",
    "TerminalInteraction",
    "Termination",
    "completed_from_message",
    "completed_to_message",
    "event_from_response",
    "to_response",
]


class Decision(enum.Enum):
    """A user's answer to an approval request."""

    APPROVED = router_pb2.APPROVAL_DECISION_APPROVED
    APPROVED_FOR_SESSION = router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION
    APPROVED_WITH_AMENDMENT = router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
    DENIED = router_pb2.APPROVAL_DECISION_DENIED
    ABORT = router_pb2.APPROVAL_DECISION_ABORT

    @classmethod
    def parse(cls, value: Decision | str | int) -> Decision:
        """From a Decision, its name (`approved_for_session`) or its wire number."""
        if isinstance(value, Decision):
            return value
        if isinstance(value, int):
            return cls(value)
        return cls[value.strip().upper().replace("-", "_")]


class ApprovalKind(enum.Enum):
    """Why an approval is asked."""

    UNSPECIFIED = router_pb2.APPROVAL_KIND_UNSPECIFIED
    EXEC_POLICY = router_pb2.APPROVAL_KIND_EXEC_POLICY
    SANDBOX_RETRY = router_pb2.APPROVAL_KIND_SANDBOX_RETRY
    APPLY_PATCH = router_pb2.APPROVAL_KIND_APPLY_PATCH
    NETWORK = router_pb2.APPROVAL_KIND_NETWORK


class Termination(enum.Enum):
    """How a call ended."""

    UNSPECIFIED = router_pb2.TERMINATION_REASON_UNSPECIFIED
    EXITED = router_pb2.TERMINATION_REASON_EXITED
    SIGNALED = router_pb2.TERMINATION_REASON_SIGNALED
    TIMED_OUT = router_pb2.TERMINATION_REASON_TIMED_OUT
    YIELDED = router_pb2.TERMINATION_REASON_YIELDED
    REJECTED = router_pb2.TERMINATION_REASON_REJECTED
    FORBIDDEN = router_pb2.TERMINATION_REASON_FORBIDDEN
    TOOL_ERROR = router_pb2.TERMINATION_REASON_TOOL_ERROR
    SPAWN_FAILED = router_pb2.TERMINATION_REASON_SPAWN_FAILED
    CANCELLED = router_pb2.TERMINATION_REASON_CANCELLED
    ENVIRONMENT_LOST = router_pb2.TERMINATION_REASON_ENVIRONMENT_LOST
    # The item is not a tool call (malformed or another item type): nothing ran, no output
    # item; `Completed.reason` says why.
    NO_TOOL_CALL = router_pb2.TERMINATION_REASON_NO_TOOL_CALL


def _enum_or_unspecified(cls: type[enum.Enum], value: int) -> Any:
    # A newer router may send values this client does not know; keep the event usable.
    try:
        return cls(value)
    except ValueError:
        return cls(0)


@dataclass(frozen=True)
class ProjectionEvent:
    """The projection of the item (first event; not repeated on resume)."""

    projection: projection_pb2.Projection
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ApprovalRequired:
    """The call waits for the user; answer with `resume(approval_id, decision)`."""

    approval_id: str
    call_id: str
    kind: ApprovalKind
    element_index: int
    argv: tuple[str, ...]
    cwd: str
    environment_id: str
    reason: str
    # The proposed prefix rule's tokens; None when no amendment is proposed.
    proposed_amendment: tuple[str, ...] | None
    approval_key_digest: str
    available_decisions: tuple[Decision, ...]
    expires_in_ms: int
    message: router_pb2.ApprovalRequired
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ApprovalPending:
    """An operator-routed approval began waiting (the stream stays open until decided)."""

    approval_id: str
    expires_in_ms: int  # time left until the deadline when it was parked
    deadline_unix_ms: int  # the deadline, wall clock
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ApprovalWaiting:
    """Keepalive while an operator-routed approval waits."""

    approval_id: str
    remaining_ms: int  # time left until the deadline
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Started:
    """A process started for the call (or one batch element)."""

    element_index: int
    environment_id: str
    process_id: str
    pid: int | None
    session_id: int | None
    sandboxed: bool
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Output:
    """A chunk of raw process output; `stream` is `stdout`, `stderr` or `pty`."""

    element_index: int
    stream: str
    seq: int
    data: bytes
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TerminalInteraction:
    """Informational: what a write_stdin call sent to a session."""

    session_id: int
    stdin: str
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Completed:
    """The final event: the output item to append to the conversation, plus metadata."""

    output_item_json: str
    output_text: str
    success: bool
    exit_code: int | None
    session_id: int | None
    wall_time_ms: int
    original_token_count: int | None
    truncated: bool
    termination: Termination
    model_warnings: tuple[str, ...]
    # Why nothing ran when `termination` is NO_TOOL_CALL (e.g. `function_call: call_id is
    # missing`); "" otherwise.
    reason: str = ""
    # The wire message this event came from (None when built locally).
    raw: router_pb2.ExecuteResponse | None = field(default=None, compare=False, repr=False)

    @property
    def output_item(self) -> dict[str, Any] | None:
        """The output item as a dict; None when the item was no tool call."""
        if not self.output_item_json:
            return None
        value: dict[str, Any] = json.loads(self.output_item_json)
        return value


Event = (
    ProjectionEvent
    | ApprovalRequired
    | ApprovalPending
    | ApprovalWaiting
    | Started
    | Output
    | TerminalInteraction
    | Completed
)

_STREAMS: dict[int, str] = {
    exec_pb2.OUTPUT_STREAM_STDOUT: "stdout",
    exec_pb2.OUTPUT_STREAM_STDERR: "stderr",
    exec_pb2.OUTPUT_STREAM_PTY: "pty",
}


def _stream_name(value: int) -> str:
    return _STREAMS.get(int(value), "unspecified")


def _approval(msg: router_pb2.ApprovalRequired) -> ApprovalRequired:
    amendment = (
        tuple(msg.proposed_amendment.prefix) if msg.HasField("proposed_amendment") else None
    )
    decisions = tuple(
        Decision(d) for d in msg.available_decisions if d in Decision._value2member_map_
    )
    return ApprovalRequired(
        approval_id=msg.approval_id,
        call_id=msg.call_id,
        kind=_enum_or_unspecified(ApprovalKind, msg.kind),
        element_index=msg.element_index,
        argv=tuple(msg.argv),
        cwd=msg.cwd,
        environment_id=msg.environment_id,
        reason=msg.reason,
        proposed_amendment=amendment,
        approval_key_digest=msg.approval_key_digest,
        available_decisions=decisions,
        expires_in_ms=msg.expires_in_ms,
        message=msg,
    )


def completed_from_message(msg: router_pb2.ExecutionCompleted) -> Completed:
    """A Completed event from its wire message."""
    return Completed(
        output_item_json=msg.output_item_json,
        output_text=msg.output_text,
        success=msg.success,
        exit_code=msg.exit_code if msg.HasField("exit_code") else None,
        session_id=msg.session_id if msg.HasField("session_id") else None,
        wall_time_ms=msg.wall_time_ms,
        original_token_count=(
            msg.original_token_count if msg.HasField("original_token_count") else None
        ),
        truncated=msg.truncated,
        termination=_enum_or_unspecified(Termination, msg.termination),
        model_warnings=tuple(msg.model_warnings),
        reason=msg.reason,
    )


def event_from_response(response: router_pb2.ExecuteResponse) -> Event | None:
    """The typed event of one ExecuteResponse; None for an event kind this client lacks."""
    event = _convert(response)
    return None if event is None else replace(event, raw=response)


def _convert(response: router_pb2.ExecuteResponse) -> Event | None:
    kind = response.WhichOneof("event")
    if kind == "projection":
        return ProjectionEvent(response.projection)
    if kind == "approval_required":
        return _approval(response.approval_required)
    if kind == "approval_pending":
        p = response.approval_pending
        return ApprovalPending(p.approval_id, p.details.expires_in_ms, p.deadline_unix_ms)
    if kind == "approval_waiting":
        w = response.approval_waiting
        return ApprovalWaiting(w.approval_id, w.remaining_ms)
    if kind == "started":
        s = response.started
        return Started(
            element_index=s.element_index,
            environment_id=s.environment_id,
            process_id=s.process_id,
            pid=s.pid if s.HasField("pid") else None,
            session_id=s.session_id if s.HasField("session_id") else None,
            sandboxed=s.sandboxed,
        )
    if kind == "output":
        o = response.output
        return Output(o.element_index, _stream_name(o.stream), o.seq, o.data)
    if kind == "terminal_interaction":
        t = response.terminal_interaction
        return TerminalInteraction(t.session_id, t.stdin)
    if kind == "completed":
        return completed_from_message(response.completed)
    return None


def completed_to_message(event: Completed) -> router_pb2.ExecutionCompleted:
    """The wire form of a Completed event (for one built locally, e.g. an abort)."""
    msg = router_pb2.ExecutionCompleted(
        output_item_json=event.output_item_json,
        output_text=event.output_text,
        success=event.success,
        wall_time_ms=event.wall_time_ms,
        truncated=event.truncated,
        termination=event.termination.value,
        model_warnings=list(event.model_warnings),
        reason=event.reason,
    )
    if event.exit_code is not None:
        msg.exit_code = event.exit_code
    if event.session_id is not None:
        msg.session_id = event.session_id
    if event.original_token_count is not None:
        msg.original_token_count = event.original_token_count
    return msg


def to_response(event: Event) -> router_pb2.ExecuteResponse | None:
    """The ExecuteResponse an event came from, or the one a local Completed stands for."""
    if event.raw is not None:
        return event.raw
    if isinstance(event, Completed):
        return router_pb2.ExecuteResponse(completed=completed_to_message(event))
    return None
