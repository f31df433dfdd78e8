"""The asyncio client (grpc.aio) for ToolRouterService."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TypeVar

import grpc
from shellgate.client import calls
from shellgate.client.calls import RunLoop, UnaryCall, stream_event
from shellgate.client.errors import from_rpc_error
from shellgate.client.events import ApprovalRequired, Completed, Decision, Event
from shellgate.client.items import ItemLike
from shellgate.client.options import ClientOptions, TlsOptions, aio_channel, merge_options
from shellgate.client.records import (
    EndThreadResult,
    EnvironmentInfo,
    ServerInfo,
    SessionInfo,
    ToolSpec,
)
from shellgate.client.requests import ThreadBook, execute_request, resume_request, unbatched
from shellgate.client.turn import TurnLike
from shellgate.v1 import projection_pb2, router_pb2, router_pb2_grpc

R = TypeVar("R")

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

    async def _unary(
        self, method: str, request: object, timeout_s: float | None = None, wait: bool = False
    ) -> object:
        # Every unary call carries the deadline and the bearer token.
        call = getattr(self._stub, method)
        try:
            return await call(
                request,
                timeout=timeout_s if timeout_s is not None else self.options.unary_timeout_s,
                metadata=self.options.metadata(),
                wait_for_ready=wait,
            )
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None

    async def _call(self, call: UnaryCall[R]) -> R:
        return call.read(await self._unary(call.method, call.request))

    async def list_tools(
        self, turn: TurnLike = None, thread_id: str | None = None
    ) -> list[ToolSpec]:
        """The tool specs the turn configuration exposes, in registration order."""
        return await self._call(calls.list_tools(self._threads.pick(thread_id), turn))

    async def project(
        self, item: ItemLike, turn: TurnLike = None, thread_id: str | None = None
    ) -> projection_pb2.Projection:
        """The dry-run projection of one output item."""
        return await self._call(calls.project(item, turn, self._threads.pick(thread_id)))

    async def _stream(
        self, request: router_pb2.ExecuteRequest, timeout_s: float | None
    ) -> AsyncIterator[Event]:
        request.coalesce_ms = self.options.coalesce_ms
        call = self._stub.Execute(
            request,
            timeout=timeout_s if timeout_s is not None else self.options.execute_timeout_s,
            metadata=self.options.metadata(),
        )
        try:
            async for response in call:
                for one in unbatched(response):
                    event = stream_event(one, self._threads, request.thread_id)
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

        An item that is no tool call returns a Completed with termination NO_TOOL_CALL and
        the `reason`; a tool error has termination TOOL_ERROR. Sending the same item again
        (same thread and call_id) never runs it twice (docs/api.md, *Retries*).

        Without an approver every approval is denied (the safe default of a non-interactive
        harness).
        """
        thread = self._threads.pick(thread_id)
        events = self.execute(item, turn, thread)
        loop = RunLoop(on_event)
        while True:
            async for event in events:
                completed = loop.feed(event)
                if completed is not None:
                    return completed
            pending = loop.take_pending()
            decision = await approver(pending) if approver is not None else Decision.DENIED
            events = self.resume(pending.approval_id, decision, thread)

    async def interrupt(self, call_id: str, thread_id: str | None = None) -> None:
        """Interrupt the in-flight Execute of a call (NotFoundError when none)."""
        await self._call(calls.interrupt(self._threads.pick(thread_id), call_id))

    async def end_thread(self, thread_id: str | None = None) -> EndThreadResult:
        """End a thread: kill its sessions, drop its approvals and pending calls."""
        return await self._call(calls.end_thread(self._threads.pick(thread_id)))

    async def list_environments(self, refresh: bool = False) -> list[EnvironmentInfo]:
        """The configured environments (probing remote ones first when `refresh`)."""
        return await self._call(calls.list_environments(refresh))

    async def list_sessions(self, thread_id: str | None = None) -> list[SessionInfo]:
        """The unified-exec sessions of a thread."""
        return await self._call(calls.list_sessions(self._threads.pick(thread_id)))

    async def terminate_session(self, session_id: int, thread_id: str | None = None) -> bool:
        """Kill one session; True when it was running (NotFoundError when unknown)."""
        thread = self._threads.pick(thread_id)
        return await self._call(calls.terminate_session(thread, session_id))

    async def server_info(self) -> ServerInfo:
        """Version, instance id, environments, rules files and the last rules error."""
        return await self._call(calls.server_info())

    async def wait_until_ready(self, timeout_s: float = 30.0) -> ServerInfo:
        """Wait (at most timeout_s) until the router is up and answering; its ServerInfo.

        The call waits for the connection instead of failing fast, so a harness can start
        right after launching the router. DeadlineExceededError when it never came up.
        """
        call = calls.server_info()
        return call.read(await self._unary(call.method, call.request, timeout_s, wait=True))
