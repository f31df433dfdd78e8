"""The MCP server: Codex's tools over a shellgate router, one thread per MCP session."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.metadata
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from shellgate.client.aio import AsyncClient
from shellgate.client.calls import RunLoop
from shellgate.client.errors import ClientError
from shellgate.client.events import ApprovalRequired, Completed, Decision, Event, Termination
from shellgate.client.items import new_call_id
from shellgate.client.records import EnvironmentInfo, ToolSpec
from shellgate.mcp import approvals
from shellgate.mcp.auth import caller_subject
from shellgate.mcp.tools import (
    LIST_ENVIRONMENTS,
    ToolArgumentError,
    call_item,
    environments_text,
    mcp_tools,
)
from shellgate.v1 import common_pb2

__all__ = ["Front", "FrontSettings", "build_server"]

# How long an unwinding front waits for each EndThread (see Front.end_thread).
END_THREAD_TIMEOUT_S = 1.5

logger = logging.getLogger(__name__)

SERVER_NAME = "shellgate"
_THREAD_KEY = "shellgate.thread_id"
_APPROVAL_INPUT = "approval"
# The router's own verdicts are output texts the model reads; these two are failures of
# the call itself, so MCP marks them (isError) as Codex's tool errors.
_ERROR_TERMINATIONS = {Termination.TOOL_ERROR, Termination.NO_TOOL_CALL}


@dataclass(frozen=True)
class FrontSettings:
    """What every call of this MCP server shares: the turn and the approval fallback."""

    turn: common_pb2.TurnContext
    specs: tuple[ToolSpec, ...]
    environments: tuple[EnvironmentInfo, ...]
    # The answer for a client that cannot be asked (no elicitation capability).
    fallback: Decision = Decision.DENIED


def _text_result(text: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


def completed_result(done: Completed) -> types.CallToolResult:
    """Codex's model-facing text of the call (the reason when no tool call ran)."""
    text = done.output_text or done.reason
    return _text_result(text, is_error=done.termination in _ERROR_TERMINATIONS)


def _is_modern(ctx: ServerRequestContext[Any]) -> bool:
    # 2026-07-28 requests are single exchanges: no back-channel, no connection-long state.
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _connection(ctx: ServerRequestContext[Any]) -> Connection | None:
    # The SDK (2.3) hands low-level handlers no public handle on the per-client Connection
    # (its `Context.connection` is not built for them yet); the session holds it. Without
    # it every call shares the process's thread.
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    caps = ctx.session.client_capabilities
    return caps is not None and caps.elicitation is not None


class Front:
    """The tool handlers; one per MCP server process."""

    def __init__(self, client: AsyncClient, settings: FrontSettings) -> None:
        self._client = client
        self._settings = settings
        self._specs = {spec.name: spec for spec in settings.specs if not spec.hidden}
        self._tools = mcp_tools(settings.specs, settings.environments)
        # Modern-era requests carry no session, and nothing else proves two of them come
        # from one client but the bearer token: each token subject (over stdio and
        # tokenless HTTP, the one anonymous caller) has one thread, ended with the process.
        # The ids are keyed digests: unpredictable, distinct per subject, never chosen
        # by a client, and fresh after a restart.
        self._thread_key = os.urandom(32)
        self.subject_threads: dict[str | None, str] = {}
        # Handshake-era sessions' threads, until their session closes.
        self.session_threads: set[str] = set()

    async def end_thread(self, thread_id: str) -> None:
        """End a thread: the router kills its sessions and drops its approvals."""
        self.session_threads.discard(thread_id)
        # Called while the front unwinds, often inside a cancelled scope (stdin closed,
        # SIGTERM): shielded, or the RPC would be cancelled before it is sent and the
        # thread's sessions would outlive the front. Bounded, because an MCP host kills a
        # server that does not exit soon (the SDK's stdio_client: 2 s after SIGTERM).
        with anyio.CancelScope(shield=True), anyio.move_on_after(END_THREAD_TIMEOUT_S):
            try:
                await self._client.end_thread(thread_id)
            except ClientError as exc:
                logger.warning("EndThread %s failed: %s", thread_id, exc)
            return
        logger.warning("EndThread %s: no answer within %.1f s", thread_id, END_THREAD_TIMEOUT_S)

    async def end_all_threads(self) -> None:
        """End every thread this front has opened (before it exits on SIGTERM)."""
        for thread in [*self.session_threads, *self.subject_threads.values()]:
            await self.end_thread(thread)

    def subject_thread(self, subject: str | None) -> str:
        """The one thread of `subject`'s modern-era (sessionless) calls."""
        thread = self.subject_threads.get(subject)
        if thread is None:
            name = b"anonymous" if subject is None else b"subject:" + subject.encode()
            digest = hmac.new(self._thread_key, name, hashlib.sha256).hexdigest()
            thread = self.subject_threads[subject] = f"mcp-{digest[:40]}"
        return thread

    def _thread_for(self, ctx: ServerRequestContext[Any]) -> str:
        connection = _connection(ctx)
        if _is_modern(ctx) or connection is None:
            return self.subject_thread(caller_subject())
        # A handshake-era session is one client (the SDK refuses its session id with
        # another token): its own random thread.
        thread = connection.state.get(_THREAD_KEY)
        if thread is None:
            thread = connection.state[_THREAD_KEY] = f"mcp-{uuid.uuid4().hex}"
            self.session_threads.add(thread)
            # Unwound when the MCP session closes (disconnect, DELETE, idle timeout).
            connection.exit_stack.push_async_callback(self.end_thread, thread)
        return str(thread)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Codex's tools, as ListTools serves them for the configured turn."""
        return types.ListToolsResult(tools=self._tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run one tool call through the router; tool errors are results, never JSON-RPC errors."""
        try:
            return await self._call_tool(ctx, params)
        except (ClientError, ToolArgumentError) as exc:
            return _text_result(str(exc), is_error=True)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name == LIST_ENVIRONMENTS and len(self._settings.environments) > 1:
            # Reachability now (the router probes the remote ones), not at start-up.
            return _text_result(environments_text(await self._client.list_environments(True)))
        thread = self._thread_for(ctx)
        if params.request_state:
            return await self._answer(ctx, params, thread)
        spec = self._specs.get(params.name)
        if spec is None:
            return _text_result(f"unsupported call: {params.name}", is_error=True)
        item = call_item(spec, params.arguments, new_call_id())
        return await self._drive(
            ctx, self._client.execute(item, self._settings.turn, thread), thread
        )

    async def _answer(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, thread: str
    ) -> types.CallToolResult | types.InputRequiredResult:
        # The retry of a 2026-era call that stopped at an approval: resume it with the answer.
        state = json.loads(str(params.request_state))
        offered = [Decision.parse(name) for name in state["offered"]]
        answer = (params.input_responses or {}).get(_APPROVAL_INPUT)
        decision = Decision.DENIED
        if isinstance(answer, types.ElicitResult):
            decision = approvals.decision_from(answer.action, answer.content, offered)
        events = self._client.resume(state["approval_id"], decision, thread)
        return await self._drive(ctx, events, thread)

    async def _drive(
        self, ctx: ServerRequestContext[Any], events: AsyncIterator[Event], thread: str
    ) -> types.CallToolResult | types.InputRequiredResult:
        loop = RunLoop(None)
        while True:
            async for event in events:
                done = loop.feed(event)
                if done is not None:
                    return completed_result(done)
            ask = loop.take_pending()
            if _is_modern(ctx) and _can_elicit(ctx):
                return _input_required(ask)
            decision = await self._decide(ctx, ask)
            events = self._client.resume(ask.approval_id, decision, thread)

    async def _decide(self, ctx: ServerRequestContext[Any], ask: ApprovalRequired) -> Decision:
        if not _can_elicit(ctx):
            return self._settings.fallback
        # The form in the client's protocol: titled choices as `oneOf` from 2025-11-25,
        # the deprecated `enumNames` for older clients.
        answer = await ctx.session.elicit_form(
            approvals.message(ask),
            approvals.requested_schema(ask, ctx.protocol_version),
            related_request_id=ctx.request_id,
        )
        return approvals.decision_from(answer.action, answer.content, approvals.choices(ask))


def _input_required(ask: ApprovalRequired) -> types.InputRequiredResult:
    offered = [d.name.lower() for d in approvals.choices(ask)]
    state = json.dumps({"approval_id": ask.approval_id, "offered": offered})
    return types.InputRequiredResult(
        input_requests={_APPROVAL_INPUT: approvals.elicit_request(ask)}, request_state=state
    )


def _version() -> str:
    try:
        return importlib.metadata.version("shellgate")
    except importlib.metadata.PackageNotFoundError:
        return ""


def build_server(front: Front) -> Server[Any]:
    """The low-level MCP server (both protocol eras) serving `front`."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            for thread in list(front.subject_threads.values()):
                await front.end_thread(thread)

    server: Server[Any] = Server(
        SERVER_NAME,
        version=_version(),
        on_list_tools=front.list_tools,
        on_call_tool=front.call_tool,
        lifespan=lifespan,
    )
    # The request_state of a 2026-era approval round trip is sealed and bound to the token
    # that got it (the SDK's default principal binding): a client can neither forge one
    # nor replay another caller's.
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name)
    )
    return server
