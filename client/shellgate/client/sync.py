"""The blocking client (grpc) for ToolRouterService."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

import grpc
from shellgate.client import calls
from shellgate.client.calls import RunLoop, UnaryCall, stream_event
from shellgate.client.errors import from_rpc_error
from shellgate.client.events import ApprovalRequired, Completed, Decision, Event
from shellgate.client.items import ItemLike
from shellgate.client.options import ClientOptions, TlsOptions, merge_options, sync_channel
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

    def _unary(
        self, method: str, request: object, timeout_s: float | None = None, wait: bool = False
    ) -> object:
        # Every unary call carries the deadline and the bearer token.
        call = getattr(self._stub, method)
        try:
            response: object = call(
                request,
                timeout=timeout_s if timeout_s is not None else self.options.unary_timeout_s,
                metadata=self.options.metadata(),
                wait_for_ready=wait,
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return response

    def _call(self, call: UnaryCall[R]) -> R:
        return call.read(self._unary(call.method, call.request))

    def list_tools(self, turn: TurnLike = None, thread_id: str | None = None) -> list[ToolSpec]:
        """The tool specs the turn configuration exposes, in registration order."""
        return self._call(calls.list_tools(self._threads.pick(thread_id), turn))

    def project(
        self, item: ItemLike, turn: TurnLike = None, thread_id: str | None = None
    ) -> projection_pb2.Projection:
        """The dry-run projection of one output item."""
        return self._call(calls.project(item, turn, self._threads.pick(thread_id)))

    def _stream(
        self, request: router_pb2.ExecuteRequest, timeout_s: float | None
    ) -> Iterator[Event]:
        request.coalesce_ms = self.options.coalesce_ms
        call = self._stub.Execute(
            request,
            timeout=timeout_s if timeout_s is not None else self.options.execute_timeout_s,
            metadata=self.options.metadata(),
        )
        try:
            for response in call:
                for one in unbatched(response):
                    event = stream_event(one, self._threads, request.thread_id)
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
        """Execute an item to its completed event; approvals go to `approver` (default deny).

        An item that is no tool call (malformed, or another item type) returns a Completed
        with termination NO_TOOL_CALL and the `reason`; a tool error (unknown tool, bad
        arguments) has termination TOOL_ERROR and the model-facing text. Sending the same
        item again (same thread and call_id) never runs it twice: it returns the call's
        result (docs/api.md, *Retries*)."""
        thread = self._threads.pick(thread_id)
        events = self.execute(item, turn, thread)
        loop = RunLoop(on_event)
        while True:
            for event in events:
                completed = loop.feed(event)
                if completed is not None:
                    return completed
            pending = loop.take_pending()
            decision = approver(pending) if approver is not None else Decision.DENIED
            events = self.resume(pending.approval_id, decision, thread)

    def interrupt(self, call_id: str, thread_id: str | None = None) -> None:
        """Interrupt the in-flight Execute of a call (NotFoundError when none)."""
        self._call(calls.interrupt(self._threads.pick(thread_id), call_id))

    def end_thread(self, thread_id: str | None = None) -> EndThreadResult:
        """End a thread: kill its sessions, drop its approvals and pending calls."""
        return self._call(calls.end_thread(self._threads.pick(thread_id)))

    def list_environments(self, refresh: bool = False) -> list[EnvironmentInfo]:
        """The configured environments (probing remote ones first when `refresh`)."""
        return self._call(calls.list_environments(refresh))

    def list_sessions(self, thread_id: str | None = None) -> list[SessionInfo]:
        """The unified-exec sessions of a thread."""
        return self._call(calls.list_sessions(self._threads.pick(thread_id)))

    def terminate_session(self, session_id: int, thread_id: str | None = None) -> bool:
        """Kill one session; True when it was running (NotFoundError when unknown)."""
        thread = self._threads.pick(thread_id)
        return self._call(calls.terminate_session(thread, session_id))

    def server_info(self) -> ServerInfo:
        """Version, instance id, environments, rules files and the last rules error."""
        return self._call(calls.server_info())

    def wait_until_ready(self, timeout_s: float = 30.0) -> ServerInfo:
        """Wait (at most timeout_s) until the router is up and answering; its ServerInfo.

        The call waits for the connection instead of failing fast, so a harness can start
        right after launching the router. DeadlineExceededError when it never came up.
        """
        call = calls.server_info()
        return call.read(self._unary(call.method, call.request, timeout_s, wait=True))
