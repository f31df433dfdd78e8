"""Domain events of one Execute call (the servicer maps them to ExecuteResponse)."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

from shellgate.common.process.base import Stream
from shellgate.router.projection import ProjectedCall, ShellElement
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision

__all__ = [
    "ApprovalDecision",
    "ApprovalKind",
    "ApprovalPendingEvent",
    "ApprovalRequiredEvent",
    "ApprovalWaitingEvent",
    "CompletedEvent",
    "ExecuteEvent",
    "NetworkContext",
    "OutputEvent",
    "ProjectionEvent",
    "StartedEvent",
    "TerminalInteractionEvent",
    "Termination",
    "output_item_json",
]


class Termination(enum.StrEnum):
    """How a call ended (TerminationReason)."""

    NONE = "unspecified"
    EXITED = "exited"
    SIGNALED = "signaled"
    TIMED_OUT = "timed_out"
    YIELDED = "yielded"
    REJECTED = "rejected"
    FORBIDDEN = "forbidden"
    TOOL_ERROR = "tool_error"
    SPAWN_FAILED = "spawn_failed"
    CANCELLED = "cancelled"
    ENVIRONMENT_LOST = "environment_lost"
    NO_TOOL_CALL = "no_tool_call"


class ApprovalKind(enum.StrEnum):
    """Why an approval is asked."""

    EXEC_POLICY = "exec_policy"
    SANDBOX_RETRY = "sandbox_retry"
    APPLY_PATCH = "apply_patch"
    NETWORK = "network"


@dataclass(frozen=True)
class ProjectionEvent:
    """The projection of the item (first event of a new call)."""

    projected: ProjectedCall


@dataclass(frozen=True)
class ApprovalRequiredEvent:
    """The call stopped for approval; the stream ends after it."""

    approval_id: str
    call_id: str
    kind: ApprovalKind
    element_index: int
    argv: tuple[str, ...]
    cwd: str
    environment_id: str
    reason: str
    proposed_amendment: tuple[str, ...] | None
    approval_key_digest: str
    available_decisions: tuple[ApprovalDecision, ...]
    element: ShellElement | None
    expires_in_ms: int
    network: NetworkContext | None = None  # kind NETWORK only


@dataclass(frozen=True)
class NetworkContext:
    """The request a network approval is about (Codex's `networkApprovalContext`)."""

    host: str
    protocol: str  # Codex's words: http, https, socks5Tcp
    port: int


@dataclass(frozen=True)
class ApprovalPendingEvent:
    """An operator-routed call waits for an operator's decision; the stream stays open."""

    details: ApprovalRequiredEvent
    deadline_ms: int  # wall clock, ms since the epoch
    # A live caller approval: the caller answers it (AnswerApproval), not an operator.
    caller_decides: bool = False


@dataclass(frozen=True)
class ApprovalWaitingEvent:
    """Keepalive while an operator-routed call waits."""

    approval_id: str
    remaining_ms: int


@dataclass(frozen=True)
class StartedEvent:
    """A process started for the call (or a batch element)."""

    element_index: int
    environment_id: str
    process_id: str
    pid: int | None
    session_id: int | None
    sandboxed: bool


@dataclass(frozen=True)
class OutputEvent:
    """A chunk of process output."""

    element_index: int
    stream: Stream
    seq: int
    data: bytes


@dataclass(frozen=True)
class TerminalInteractionEvent:
    """Informational: what write_stdin sent to a session."""

    session_id: int
    stdin: str


@dataclass(frozen=True)
class CompletedEvent:
    """The final tool output and its structured fields."""

    output_item_json: str
    output_text: str
    success: bool
    exit_code: int | None
    session_id: int | None
    wall_time_ms: int
    original_token_count: int | None
    truncated: bool
    termination: Termination
    model_warnings: tuple[str, ...] = field(default=())
    # Why nothing ran when the item is no tool call (termination NO_TOOL_CALL); else "".
    reason: str = ""


ExecuteEvent = (
    ProjectionEvent
    | ApprovalRequiredEvent
    | ApprovalPendingEvent
    | ApprovalWaitingEvent
    | StartedEvent
    | OutputEvent
    | TerminalInteractionEvent
    | CompletedEvent
)


def output_item_json(call_id: str, text: str, *, custom: bool) -> str:
    """The output item as it must be appended to the conversation (compact, UTF-8 as is)."""
    item = {
        "type": "custom_tool_call_output" if custom else "function_call_output",
        "call_id": call_id,
        "output": text,
    }
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))
