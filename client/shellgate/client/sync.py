"""The blocking client (grpc) for ToolRouterService."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import TracebackType

import grpc
from shellgate.client.errors import from_rpc_error
from shellgate.client.events import (
    ApprovalRequired,
    Completed,
    Decision,
    Event,
    event_from_response,
)
from shellgate.client.items import ItemLike
from shellgate.client.options import ClientOptions, TlsOptions, merge_options, sync_channel
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
from shellgate.client.requests import ThreadBook, execute_request, project_request, resume_request
from shellgate.client.turn import TurnLike, to_turn_context
from shellgate.v1 import projection_pb2, router_pb2, router_pb2_grpc

__all__ = ["Client", "SyncApprover"]

# Called for each approval_required event of `run`; returns the user's decision.
SyncApprover = Callable[[ApprovalRequired], Decision | str]


class Client:
    """ToolRouterService over a blocking channel; use as `with Client(...) as client`.

    Same surface as AsyncClient: thread-scoped methods default to `client.thread_id`.
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        options: ClientOptions | None = None,
        tls: TlsOptions | None = None,
        token: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        self.options = merge_options(options, target=target, tls=tls, token=token)
        self._threads = ThreadBook(thread_id)
        self._channel = sync_channel(self.options)
        self._stub = router_pb2_grpc.ToolRouterServiceStub(self._channel)

    @property
    def thread_id(self) -> str:
        """The client's default thread id."""
        return self._threads.default

    def close(self) -> None:
        """Close the channel (in-flight calls are cancelled)."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _unary(self, method: str, request: object) -> object:
        # Every unary call carries the deadline and the bearer token.
        call = getattr(self._stub, method)
        try:
            response: object = call(
                request,
                timeout=self.options.unary_timeout_s,
                metadata=self.options.metadata(),
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return response

    def list_tools(self, turn: TurnLike = None, thread_id: str | None = None) -> list[ToolSpec]:
        """The tool specs the turn configuration exposes, in registration order."""
        request = router_pb2.ListToolsRequest(
            thread_id=self._threads.pick(thread_id), turn=to_turn_context(turn)
        )
        response = self._unary("ListTools", request)
        assert isinstance(response, router_pb2.ListToolsResponse)
        return [tool_from_message(tool) for tool in response.tools]

    def project(
        self, item: ItemLike, turn: TurnLike = None, thread_id: str | None = None
    ) -> projection_pb2.Projection:
        """The dry-run projection of one output item."""
        response = self._unary("Project", project_request(item, turn, self._threads.pick(thread_id)))
        assert isinstance(response, router_pb2.ProjectResponse)
        return response.projection

    def _stream(
        self, request: router_pb2.ExecuteRequest, timeout_s: float | None
    ) -> Iterator[Event]:
        call = self._stub.Execute(
            request,
            timeout=timeout_s if timeout_s is not None else self.options.execute_timeout_s,
            metadata=self.options.metadata(),
        )
        try:
            for response in call:
                event = event_from_response(response)
                if isinstance(event, ApprovalRequired):
                    self._threads.remember(event.approval_id, request.thread_id)
                if event is not None:
                    yield event
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        finally:
            # Stopping early cancels the RPC; the router then kills a classic command and the
            # harness pairs the call with `abort_output_item`.
            call.cancel()

    def execute(
        self,
        item: ItemLike,
        turn: TurnLike = None,
        thread_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> Iterator[Event]:
        """Run one output item; yields projection, approval_required | started, output…, completed."""
        return self._stream(execute_request(item, turn, self._threads.pick(thread_id)), timeout_s)

    def resume(
        self,
        approval_id: str,
        decision: Decision | str,
        thread_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> Iterator[Event]:
        """Continue a call that stopped at approval_required; yields the rest of its events."""
        thread = self._threads.for_approval(approval_id, thread_id)
        return self._stream(resume_request(approval_id, decision, thread), timeout_s)

    def run(
        self,
        item: ItemLike,
        turn: TurnLike = None,
        thread_id: str | None = None,
        *,
        approver: SyncApprover | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Completed:
        """Execute an item to its completed event; approvals go to `approver` (default deny)."""
        thread = self._threads.pick(thread_id)
        events = self.execute(item, turn, thread)
        while True:
            pending: ApprovalRequired | None = None
            for event in events:
                if on_event is not None:
                    on_event(event)
                if isinstance(event, Completed):
                    return event
                if isinstance(event, ApprovalRequired):
                    pending = event
            if pending is None:
                raise RuntimeError("Execute stream ended without completed or approval_required")
            decision = approver(pending) if approver is not None else Decision.DENIED
            events = self.resume(pending.approval_id, decision, thread)

    def interrupt(self, call_id: str, thread_id: str | None = None) -> None:
        """Interrupt the in-flight Execute of a call (NotFoundError when none)."""
        request = router_pb2.InterruptRequest(
            thread_id=self._threads.pick(thread_id), call_id=call_id
        )
        self._unary("Interrupt", request)

    def end_thread(self, thread_id: str | None = None) -> EndThreadResult:
        """End a thread: kill its sessions, drop its approvals and pending calls."""
        request = router_pb2.EndThreadRequest(thread_id=self._threads.pick(thread_id))
        response = self._unary("EndThread", request)
        assert isinstance(response, router_pb2.EndThreadResponse)
        return EndThreadResult(response.terminated_sessions, response.dropped_pending_approvals)

    def list_environments(self, refresh: bool = False) -> list[EnvironmentInfo]:
        """The configured environments (probing remote ones first when `refresh`)."""
        response = self._unary(
            "ListEnvironments", router_pb2.ListEnvironmentsRequest(refresh=refresh)
        )
        assert isinstance(response, router_pb2.ListEnvironmentsResponse)
        return [environment_from_message(env) for env in response.environments]

    def list_sessions(self, thread_id: str | None = None) -> list[SessionInfo]:
        """The unified-exec sessions of a thread."""
        request = router_pb2.ListSessionsRequest(thread_id=self._threads.pick(thread_id))
        response = self._unary("ListSessions", request)
        assert isinstance(response, router_pb2.ListSessionsResponse)
        return [session_from_message(s) for s in response.sessions]

    def terminate_session(self, session_id: int, thread_id: str | None = None) -> bool:
        """Kill one session; True when it was running (NotFoundError when unknown)."""
        request = router_pb2.TerminateSessionRequest(
            thread_id=self._threads.pick(thread_id), session_id=session_id
        )
        response = self._unary("TerminateSession", request)
        assert isinstance(response, router_pb2.TerminateSessionResponse)
        return response.was_running

    def server_info(self) -> ServerInfo:
        """Version, instance id, environments, rules files and the last rules error."""
        response = self._unary("GetServerInfo", router_pb2.GetServerInfoRequest())
        assert isinstance(response, router_pb2.GetServerInfoResponse)
        return server_info_from_message(response)
