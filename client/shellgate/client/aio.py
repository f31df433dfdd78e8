"""The asyncio client (grpc.aio) for ToolRouterService."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
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
from shellgate.client.options import ClientOptions, TlsOptions, aio_channel, merge_options
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
from shellgate.client.requests import (
    ThreadBook,
    execute_request,
    project_request,
    resume_request,
)
from shellgate.client.turn import TurnLike, to_turn_context
from shellgate.v1 import projection_pb2, router_pb2, router_pb2_grpc

__all__ = ["Approver", "AsyncClient"]

# Called for each approval_required event of `run`; returns the user's decision.
Approver = Callable[[ApprovalRequired], Awaitable[Decision | str]]


class AsyncClient:
    """ToolRouterService over grpc.aio; use as `async with AsyncClient(...) as client`.

    Thread-scoped methods take `thread_id`; when omitted they use the client's own thread
    (`client.thread_id`, generated unless given), so one client can stand for one
    conversation.
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
        self._channel = aio_channel(self.options)
        self._stub = router_pb2_grpc.ToolRouterServiceStub(self._channel)

    @property
    def thread_id(self) -> str:
        """The client's default thread id."""
        return self._threads.default

    async def close(self) -> None:
        """Close the channel (in-flight calls are cancelled)."""
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _unary(self, method: str, request: object) -> object:
        # Every unary call carries the deadline and the bearer token.
        call = getattr(self._stub, method)
        try:
            return await call(
                request,
                timeout=self.options.unary_timeout_s,
                metadata=self.options.metadata(),
            )
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None

    async def list_tools(
        self, turn: TurnLike = None, thread_id: str | None = None
    ) -> list[ToolSpec]:
        """The tool specs the turn configuration exposes, in registration order."""
        request = router_pb2.ListToolsRequest(
            thread_id=self._threads.pick(thread_id), turn=to_turn_context(turn)
        )
        response = await self._unary("ListTools", request)
        assert isinstance(response, router_pb2.ListToolsResponse)
        return [tool_from_message(tool) for tool in response.tools]

    async def project(
        self, item: ItemLike, turn: TurnLike = None, thread_id: str | None = None
    ) -> projection_pb2.Projection:
        """The dry-run projection of one output item."""
        request = project_request(item, turn, self._threads.pick(thread_id))
        response = await self._unary("Project", request)
        assert isinstance(response, router_pb2.ProjectResponse)
        return response.projection

    async def _stream(
        self, request: router_pb2.ExecuteRequest, timeout_s: float | None
    ) -> AsyncIterator[Event]:
        call = self._stub.Execute(
            request,
            timeout=timeout_s if timeout_s is not None else self.options.execute_timeout_s,
            metadata=self.options.metadata(),
        )
        try:
            async for response in call:
                event = event_from_response(response)
                if isinstance(event, ApprovalRequired):
                    self._threads.remember(event.approval_id, request.thread_id)
                if event is not None:
                    yield event
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None
        finally:
            # The consumer stopped early (break, cancellation, error): cancelling the RPC
            # tells the router to kill a classic command; the harness then pairs the call
            # with `abort_output_item`.
            call.cancel()

    def execute(
        self,
        item: ItemLike,
        turn: TurnLike = None,
        thread_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> AsyncIterator[Event]:
        """Run one output item; yields projection, approval_required | started, output…, completed."""
        return self._stream(execute_request(item, turn, self._threads.pick(thread_id)), timeout_s)

    def resume(
        self,
        approval_id: str,
        decision: Decision | str,
        thread_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> AsyncIterator[Event]:
        """Continue a call that stopped at approval_required; yields the rest of its events."""
        thread = self._threads.for_approval(approval_id, thread_id)
        return self._stream(resume_request(approval_id, decision, thread), timeout_s)

    async def run(
        self,
        item: ItemLike,
        turn: TurnLike = None,
        thread_id: str | None = None,
        *,
        approver: Approver | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Completed:
        """Execute an item to its completed event, answering approvals with `approver`.

        Without an approver every approval is denied (the safe default of a non-interactive
        harness).
        """
        thread = self._threads.pick(thread_id)
        events = self.execute(item, turn, thread)
        while True:
            pending: ApprovalRequired | None = None
            async for event in events:
                if on_event is not None:
                    on_event(event)
                if isinstance(event, Completed):
                    return event
                if isinstance(event, ApprovalRequired):
                    pending = event
            if pending is None:
                raise RuntimeError("Execute stream ended without completed or approval_required")
            decision = await approver(pending) if approver is not None else Decision.DENIED
            events = self.resume(pending.approval_id, decision, thread)

    async def interrupt(self, call_id: str, thread_id: str | None = None) -> None:
        """Interrupt the in-flight Execute of a call (NotFoundError when none)."""
        request = router_pb2.InterruptRequest(
            thread_id=self._threads.pick(thread_id), call_id=call_id
        )
        await self._unary("Interrupt", request)

    async def end_thread(self, thread_id: str | None = None) -> EndThreadResult:
        """End a thread: kill its sessions, drop its approvals and pending calls."""
        request = router_pb2.EndThreadRequest(thread_id=self._threads.pick(thread_id))
        response = await self._unary("EndThread", request)
        assert isinstance(response, router_pb2.EndThreadResponse)
        return EndThreadResult(response.terminated_sessions, response.dropped_pending_approvals)

    async def list_environments(self, refresh: bool = False) -> list[EnvironmentInfo]:
        """The configured environments (probing remote ones first when `refresh`)."""
        response = await self._unary(
            "ListEnvironments", router_pb2.ListEnvironmentsRequest(refresh=refresh)
        )
        assert isinstance(response, router_pb2.ListEnvironmentsResponse)
        return [environment_from_message(env) for env in response.environments]

    async def list_sessions(self, thread_id: str | None = None) -> list[SessionInfo]:
        """The unified-exec sessions of a thread."""
        request = router_pb2.ListSessionsRequest(thread_id=self._threads.pick(thread_id))
        response = await self._unary("ListSessions", request)
        assert isinstance(response, router_pb2.ListSessionsResponse)
        return [session_from_message(s) for s in response.sessions]

    async def terminate_session(self, session_id: int, thread_id: str | None = None) -> bool:
        """Kill one session; True when it was running (NotFoundError when unknown)."""
        request = router_pb2.TerminateSessionRequest(
            thread_id=self._threads.pick(thread_id), session_id=session_id
        )
        response = await self._unary("TerminateSession", request)
        assert isinstance(response, router_pb2.TerminateSessionResponse)
        return response.was_running

    async def server_info(self) -> ServerInfo:
        """Version, instance id, environments, rules files and the last rules error."""
        response = await self._unary("GetServerInfo", router_pb2.GetServerInfoRequest())
        assert isinstance(response, router_pb2.GetServerInfoResponse)
        return server_info_from_message(response)
