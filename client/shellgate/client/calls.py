"""The sans-I/O core both clients share: unary calls as data, stream events, `run` bookkeeping.

`AsyncClient` and `Client` differ only in how they wait (grpc.aio versus blocking grpc); what
each RPC sends and how its answer is read lives here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from google.protobuf.message import Message
from shellgate.client.events import (
    ApprovalRequired,
    Completed,
    Event,
    ProjectionEvent,
    Termination,
    event_from_response,
)
from shellgate.client.items import ItemLike
from shellgate.client.records import (
    EndThreadResult,
    EnvironmentInfo,
    ServerInfo,
    SessionInfo,
    ToolSpec,
    environment_from_message,
    server_info_from_message,
    session_from_message,
    tool_from_message,
)
from shellgate.client.requests import ThreadBook, project_request
from shellgate.client.turn import TurnLike, to_turn_context
from shellgate.v1 import projection_pb2, router_pb2

__all__ = [
    "RunLoop",
    "UnaryCall",
    "end_thread",
    "explain_no_tool_call",
    "interrupt",
    "list_environments",
    "list_sessions",
    "list_tools",
    "project",
    "server_info",
    "stream_event",
    "terminate_session",
]

R = TypeVar("R")
M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class UnaryCall(Generic[R]):
    """One unary RPC: the stub method's name, its request, and how to read the response."""

    method: str
    request: Message
    read: Callable[[object], R]


def _reader(kind: type[M], convert: Callable[[M], R]) -> Callable[[object], R]:
    def read(response: object) -> R:
        assert isinstance(response, kind)
        return convert(response)

    return read


def list_tools(thread_id: str, turn: TurnLike) -> UnaryCall[list[ToolSpec]]:
    """ListTools: the tool specs of a turn configuration, in registration order."""
    request = router_pb2.ListToolsRequest(thread_id=thread_id, turn=to_turn_context(turn))
    return UnaryCall(
        "ListTools",
        request,
        _reader(router_pb2.ListToolsResponse, lambda r: [tool_from_message(t) for t in r.tools]),
    )


def project(item: ItemLike, turn: TurnLike, thread_id: str) -> UnaryCall[projection_pb2.Projection]:
    """Project: the dry-run projection of one output item."""
    return UnaryCall(
        "Project",
        project_request(item, turn, thread_id),
        _reader(router_pb2.ProjectResponse, lambda r: r.projection),
    )


def interrupt(thread_id: str, call_id: str) -> UnaryCall[None]:
    """Interrupt: stop the in-flight Execute of a call."""
    request = router_pb2.InterruptRequest(thread_id=thread_id, call_id=call_id)
    return UnaryCall("Interrupt", request, lambda _response: None)


def end_thread(thread_id: str) -> UnaryCall[EndThreadResult]:
    """EndThread: what ending the thread terminated and dropped."""
    return UnaryCall(
        "EndThread",
        router_pb2.EndThreadRequest(thread_id=thread_id),
        _reader(
            router_pb2.EndThreadResponse,
            lambda r: EndThreadResult(r.terminated_sessions, r.dropped_pending_approvals),
        ),
    )


def list_environments(refresh: bool) -> UnaryCall[list[EnvironmentInfo]]:
    """ListEnvironments: the configured environments."""
    return UnaryCall(
        "ListEnvironments",
        router_pb2.ListEnvironmentsRequest(refresh=refresh),
        _reader(
            router_pb2.ListEnvironmentsResponse,
            lambda r: [environment_from_message(env) for env in r.environments],
        ),
    )


def list_sessions(thread_id: str) -> UnaryCall[list[SessionInfo]]:
    """ListSessions: the unified-exec sessions of a thread."""
    return UnaryCall(
        "ListSessions",
        router_pb2.ListSessionsRequest(thread_id=thread_id),
        _reader(
            router_pb2.ListSessionsResponse, lambda r: [session_from_message(s) for s in r.sessions]
        ),
    )


def terminate_session(thread_id: str, session_id: int) -> UnaryCall[bool]:
    """TerminateSession: True when the session was running."""
    return UnaryCall(
        "TerminateSession",
        router_pb2.TerminateSessionRequest(thread_id=thread_id, session_id=session_id),
        _reader(router_pb2.TerminateSessionResponse, lambda r: r.was_running),
    )


def server_info() -> UnaryCall[ServerInfo]:
    """GetServerInfo: version, instance id, environments, rules files and the last error."""
    return UnaryCall(
        "GetServerInfo",
        router_pb2.GetServerInfoRequest(),
        _reader(router_pb2.GetServerInfoResponse, server_info_from_message),
    )


def stream_event(
    response: router_pb2.ExecuteResponse, threads: ThreadBook, thread_id: str
) -> Event | None:
    """The event of one Execute response (None for an unknown kind).

    An approval's thread is remembered so `resume` needs no thread id.
    """
    event = event_from_response(response)
    if isinstance(event, ApprovalRequired):
        threads.remember(event.approval_id, thread_id)
    return event


def explain_no_tool_call(completed: Completed, projection: ProjectionEvent | None) -> Completed:
    """`completed` with its NO_TOOL_CALL termination and reason filled in from the projection
    when the router predates them (it sent an empty completed after a no_tool_call)."""
    if completed.termination is not Termination.UNSPECIFIED or projection is None:
        return completed
    if projection.projection.WhichOneof("outcome") != "no_tool_call":
        return completed
    reason = projection.projection.no_tool_call.reason
    return replace(completed, termination=Termination.NO_TOOL_CALL, reason=reason)


class RunLoop:
    """`run`'s bookkeeping: feed it each event; when a stream ends, it names the approval."""

    def __init__(self, on_event: Callable[[Event], None] | None) -> None:
        self._on_event = on_event
        self._pending: ApprovalRequired | None = None
        self._projection: ProjectionEvent | None = None

    def feed(self, event: Event) -> Completed | None:
        """Report the event; the completed event ends the run."""
        if self._on_event is not None:
            self._on_event(event)
        if isinstance(event, ProjectionEvent):
            self._projection = event
        if isinstance(event, Completed):
            return explain_no_tool_call(event, self._projection)
        if isinstance(event, ApprovalRequired):
            self._pending = event
        return None

    def take_pending(self) -> ApprovalRequired:
        """The approval the ended stream stopped at (RuntimeError when it stopped at none)."""
        pending, self._pending = self._pending, None
        if pending is None:
            raise RuntimeError("Execute stream ended without completed or approval_required")
        return pending
