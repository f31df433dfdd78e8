"""ToolRouterService: protobuf ↔ domain, nothing else (errors mapped at one boundary)."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import grpc
from shellgate.common.boundary import streaming, unary
from shellgate.common.errors import InvalidArgumentError
from shellgate.common.grpc.batching import coalesced
from shellgate.common.log_setup import tag_log
from shellgate.common.tracing import set_attributes, span
from shellgate.router.decode.tool_call import PayloadKind, ToolCall, ToolName
from shellgate.router.decode.tools import list_tools
from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.projection import (
    ApplyPatchToolCall,
    ProjectedCall,
    ShellCall,
    WriteStdinCall,
)
from shellgate.router.runtime.call.context import RuntimeContext
from shellgate.router.runtime.call.events import (
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
    ProjectionEvent,
)
from shellgate.router.runtime.call.execute import execute_call, resume_call
from shellgate.router.runtime.call.ledger import Attached, Recording, Replayed, item_digest
from shellgate.router.runtime.threads.registry import ThreadState, owned_thread_key
from shellgate.router.service.app import Caller, RouterApp
from shellgate.router.service.metrics import CallClock, trace_event
from shellgate.router.service.wire.events import (
    DECISIONS,
    batch_body,
    batch_response,
    event_pb,
    in_execute_once,
    reply_bytes,
    sent_at_once,
)
from shellgate.router.service.wire.project_cache import ProjectCache
from shellgate.router.service.wire.projection import fill_projection
from shellgate.router.service.wire.thread_rpcs import ThreadRpcs
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

Ctx = grpc.aio.ServicerContext[Any, Any]
MAX_CALL_ID_CHARS = 512
MAX_NAME_CHARS = 256
# Items up to this many characters are projected on the event loop: the pipeline takes well
# under a millisecond for them, less than a worker-thread hop costs on a busy core (hand-off,
# self-pipe wake-up and GIL switches). Larger items still go to a thread.
INLINE_PROJECT_MAX_CHARS = 8 * 1024
ITEM_LIMIT = "limits.max_item_bytes"

async def _check_state_room(projected: ProjectedCall, thread: ThreadState) -> None:
    """RESOURCE_EXHAUSTED naming the limit before a new call starts when the state it may
    create (a parked approval, a unified-exec session) has no room; the runtime checks again
    at the point of creation, where a refusal is the call's tool output."""
    await thread.check_pending_room()
    outcome = projected.outcome
    if isinstance(outcome, ShellCall) and outcome.tool == "exec_command":
        thread.sessions.check_room()


def _metadata(context: Ctx) -> dict[str, str]:
    return {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}


def item_of(item: common_pb2.ToolCallItem, max_bytes: int) -> str | ToolCall:
    """The raw JSON text or the already split call of a request."""
    which = item.WhichOneof("item")
    if which == "raw_json":
        if len(item.raw_json.encode()) > max_bytes:
            raise InvalidArgumentError(
                f"item.raw_json: larger than {max_bytes} bytes", limit=ITEM_LIMIT
            )
        return item.raw_json
    if which != "split":
        raise InvalidArgumentError("item: set raw_json or split")
    s = item.split
    if len(s.arguments.encode()) > max_bytes:
        raise InvalidArgumentError(
            f"item.split.arguments: larger than {max_bytes} bytes", limit=ITEM_LIMIT
        )
    if len(s.call_id) > MAX_CALL_ID_CHARS or len(s.name) > MAX_NAME_CHARS:
        raise InvalidArgumentError("item.split: call_id or name too long")
    kind = (
        PayloadKind.CUSTOM
        if s.kind == common_pb2.TOOL_CALL_KIND_CUSTOM_TOOL_CALL
        else PayloadKind.FUNCTION
    )
    namespace = s.namespace if s.HasField("namespace") else None
    if kind is PayloadKind.CUSTOM:
        return ToolCall(ToolName(namespace, s.name), s.call_id, kind, input=s.arguments)
    return ToolCall(ToolName(namespace, s.name), s.call_id, kind, arguments=s.arguments)


log = logging.getLogger(__name__)

class ToolRouterServicer(ThreadRpcs, router_pb2_grpc.ToolRouterServiceServicer):  # type: ignore[misc]
    """The gRPC face of a RouterApp."""

    def __init__(self, app: RouterApp) -> None:
        self._app = app
        # The boundary (shellgate.common.boundary) counts every error status here.
        self.on_rpc_error = app.metrics.rpc_rejected
        self._call_log_level = logging.getLevelName(app.config.call_log_level.upper())
        # One generator for every call's chunk ids: seeding one per call reads the OS
        # entropy pool each time (calls all run on the event loop, so sharing is safe).
        self._rng = random.Random()
        # Project answers for repeated identical requests (wire/project_cache.py).
        self._projections = ProjectCache()

    def _caller(self, context: Ctx) -> Caller:
        if self._app.auth.open:
            # No credentials configured: skip copying the metadata and the peer identity.
            return self._app.caller({}, {})
        identity = {k: list(v) for k, v in (context.auth_context() or {}).items()}
        return self._app.caller(_metadata(context), identity)

    def _host(self, thread: ThreadState | None) -> HostContext:
        host = self._app.host()
        if thread is None:
            return host
        sessions = thread.sessions
        return HostContext(
            policy=host.policy,
            parent_env=host.parent_env,
            filesystem=host.filesystem,
            # A session whose environment was lost still "exists": the runtime answers with
            # the environment-lost text instead of the unknown-process one (spec 06 §5).
            session_exists=sessions.exists,
            strict_unlowerable=host.strict_unlowerable,
            memo=host.memo,
        )

    async def _project(
        self, request: Any, caller: Caller, thread: ThreadState | None
    ) -> tuple[ProjectedCall, Any]:
        with span("shellgate.project"):
            return await self._project_traced(request, caller, thread)

    async def _project_traced(
        self, request: Any, caller: Caller, thread: ThreadState | None
    ) -> tuple[ProjectedCall, Any]:
        turn = await self._app.turn(request.thread_id, request.turn, caller)
        item = item_of(request.item, self._app.config.limits.max_item_bytes)
        host = self._host(thread)
        if _inline(item, turn):
            projected = project(item, turn, host)
        else:
            # Decode and tree-sitter work is CPU-bound: the bounded CPU pool, not the loop.
            projected = await self._app.run_cpu(project, item, turn, host)
        return self._with_reachability(projected), turn

    def _with_reachability(self, projected: ProjectedCall) -> ProjectedCall:
        """Warn in the projection when a selected remote environment is unreachable."""
        if not isinstance(projected.outcome, ShellCall):
            return projected
        ids = dict.fromkeys(e.handler.environment_id for e in projected.outcome.elements)
        notes = tuple(
            f"environment `{env_id}` is unavailable: {reason}"
            for env_id in ids
            if (reason := self._app.unreachable(env_id)) is not None
        )
        return (
            dataclasses.replace(projected, warnings=projected.warnings + notes)
            if notes
            else projected
        )

    @unary
    async def ListTools(
        self, request: router_pb2.ListToolsRequest, context: Ctx
    ) -> router_pb2.ListToolsResponse:
        """Tool specs the turn exposes, as Responses API `tools` entries."""
        turn = await self._app.turn(
            request.thread_id or "list-tools", request.turn, self._caller(context)
        )
        tools = list_tools(turn.tools)
        return router_pb2.ListToolsResponse(
            tools=[
                router_pb2.ToolSpec(name=t["name"], json=json.dumps(t, ensure_ascii=False))
                for t in tools
            ]
        )

    @unary
    async def Project(
        self, request: router_pb2.ProjectRequest, context: Ctx
    ) -> bytes:
        """The dry run: decode and project, no side effects (serialized ProjectResponse)."""
        return await self.project_for(request, self._caller(context))

    async def project_for(self, request: router_pb2.ProjectRequest, caller: Caller) -> bytes:
        """Project for an authenticated caller (the main port, and the door's misses)."""
        async with self._app.project_admission.slot(caller.subject):
            with span("shellgate.project"):
                return await self._project_answer(request, caller)

    def project_now(self, request: router_pb2.ProjectRequest, caller: Caller) -> bytes | None:
        """Project's answer when it needs nothing from the event loop, from any thread (the
        Project door's workers: a kept turn and host, a local inline item); else None."""
        turn = self._app.turns.turn_now(request.thread_id, request.turn, caller.environments)
        host = self._app.host_now()
        if turn is None or host is None:
            return None
        item = item_of(request.item, self._app.config.limits.max_item_bytes)
        return self._kept_or_projected(request, item, turn, host) if _inline(item, turn) else None

    async def _project_answer(self, request: router_pb2.ProjectRequest, caller: Caller) -> bytes:
        turn = await self._app.turn(request.thread_id, request.turn, caller)
        item = item_of(request.item, self._app.config.limits.max_item_bytes)
        host = self._host(None)
        if not _inline(item, turn):
            # Large: the pipeline and the MiB of text filled and serialized into the answer
            # all run on a worker, so the loop (Health, other calls) is not held meanwhile.
            return await self._app.run_cpu(self._answer_of, item, turn, host)
        return self._kept_or_projected(request, item, turn, host)

    def _kept_or_projected(
        self, request: router_pb2.ProjectRequest, item: str | ToolCall, turn: RouterTurn,
        host: HostContext,
    ) -> bytes:  # fmt: skip
        key = request.item.SerializeToString(deterministic=True)
        if (answer := self._projections.get(key, turn, host)) is not None:
            return answer
        answer = self._answer_of(item, turn, host)
        self._projections.put(key, turn, host, answer)
        return answer

    def _answer_of(self, item: str | ToolCall, turn: RouterTurn, host: HostContext) -> bytes:
        """The serialized ProjectResponse of one item (thread-safe: the memo is)."""
        response = router_pb2.ProjectResponse()
        # Filled in place: a constructed Projection handed to the response would be copied.
        projected = self._with_reachability(project(item, turn, host))
        fill_projection(response.projection, projected, self._app.memo)
        return response.SerializeToString()

    @streaming
    async def Execute(
        self, request: router_pb2.ExecuteRequest, context: Ctx
    ) -> AsyncGenerator[router_pb2.ExecuteResponse | bytes, None]:
        """The whole pipeline for one item, or the continuation of a parked call."""
        memo = self._app.memo
        # The trace context a caller sent (W3C traceparent) is the parent of the call's span.
        with span("shellgate.execute", metadata=context.invocation_metadata()) as trace:
            events = self._execute(request, context, trace)
            if not request.coalesce_ms:
                async for event in events:
                    yield event_pb(event, memo)
                return

            async def marked() -> AsyncIterator[tuple[bytes, bool]]:
                async for event in events:
                    yield reply_bytes(event_pb(event, memo)), sent_at_once(event)

            async for message in coalesced(marked(), request.coalesce_ms, batch_response):
                yield message

    @unary
    async def ExecuteOnce(self, once: router_pb2.ExecuteOnceRequest, context: Ctx) -> bytes:
        """Execute as one unary call: the stream's events but the output, in one reply."""
        memo = self._app.memo
        kept: list[bytes] = []
        with span("shellgate.execute", metadata=context.invocation_metadata()) as trace:
            events = self._execute(once.request, context, trace)
            async for event in events:
                if in_execute_once(event):
                    kept.append(reply_bytes(event_pb(event, memo)))
                if isinstance(event, CompletedEvent | ApprovalRequiredEvent):
                    # The call is over: its bookkeeping after the end (the call ledger's
                    # record) finishes in the background instead of delaying the reply, as
                    # it does after a stream's last event.
                    self._app.call_tails.spawn(_drain(events), name="execute-once-finish")
                    break
        return batch_body(kept)

    async def _execute(
        self, request: router_pb2.ExecuteRequest, context: Ctx, trace: Any
    ) -> AsyncIterator[ExecuteEvent]:
        caller = self._caller(context)
        async with self._app.execute_admission.slot(caller.subject):
            which = request.WhichOneof("input")
            if which is None:
                raise InvalidArgumentError("set item or resume")
            # Every line logged for this call (this task and those it starts) names it.
            tag_log(request.thread_id)
            key = owned_thread_key(caller.subject, request.thread_id)
            turn_thread = await self._app.threads.get_or_create(key)
            ctx = RuntimeContext(
                thread=turn_thread,
                environments=self._app.environments,
                policy_store=self._app.policy_store,
                instance_id=self._app.instance_id,
                rng=self._rng,
                audit=self._app.audit_sink,
                operator=self._app.operator.approvals,
                caller_subject=caller.subject,
            )
            events: AsyncIterator[ExecuteEvent]
            if which == "resume":
                decision = DECISIONS.get(request.resume.decision)
                if decision is None:
                    raise InvalidArgumentError("resume.decision: unspecified")

                async def reproject(origin: bytes) -> tuple[ProjectedCall, RouterTurn]:
                    # The parked call's stored request, through the same pipeline and checks.
                    stored = router_pb2.ExecuteRequest.FromString(origin)
                    stored.thread_id = request.thread_id
                    again, turn = await self._project(stored, caller, turn_thread)
                    self._check_environments(caller, again, turn_thread)
                    return again, turn

                recording = self._app.calls.resuming(turn_thread)
                events = resume_call(
                    request.resume.approval_id, decision, ctx, reproject, recording.bind
                )
                events = recording.wrap(self._redacted(events))
            else:
                projected, turn = await self._project(request, caller, turn_thread)
                tag_log(request.thread_id, projected.call_id)
                self._check_environments(caller, projected, turn_thread)
                events = await self._new_call(request, projected, turn, ctx)
            tool, environment = _labels(projected if which == "item" else None)
            metrics = self._app.metrics
            clock = CallClock(metrics.tool(tool))
            set_attributes(trace, {"tool": clock.tool, "environment": environment or ""})
            async for event in events:
                trace_event(trace, clock, event)
                metrics.observe_event(clock, event)
                if isinstance(event, CompletedEvent):
                    self._app.metrics.call_completed(
                        tool, event.termination.value, environment, event.wall_time_ms
                    )
                    log.log(
                        self._call_log_level,
                        "call completed: tool=%s environment=%s outcome=%s exit=%s wall_ms=%d",
                        tool or "-", environment or "-", event.termination.value,
                        event.exit_code, event.wall_time_ms,
                    )  # fmt: skip
                yield event

    def _redacted(self, events: AsyncIterator[ExecuteEvent]) -> AsyncIterator[ExecuteEvent]:
        return events if self._app.redactor is None else self._app.redactor.events(events)

    async def _new_call(
        self,
        request: router_pb2.ExecuteRequest,
        projected: ProjectedCall,
        turn: RouterTurn,
        ctx: RuntimeContext,
    ) -> AsyncIterator[ExecuteEvent]:
        """The events of an item: a new call, or (same thread and call_id) a retry of one:
        attached to it while it runs, its stored result after (runtime/call/ledger.py)."""
        thread = ctx.thread
        if not projected.call_id:
            # No tool call (nothing runs, nothing to retry).
            return execute_call(projected, turn, ctx)
        await _check_state_room(projected, thread)
        digest = item_digest(request.item.SerializeToString(deterministic=True))
        claim = await self._app.calls.claim(thread, projected.call_id, digest)
        if isinstance(claim, Attached):
            # Already redacted: the recorded stream is the one its first Execute sent.
            return _after(ProjectionEvent(projected), self._app.calls.follow(claim))
        if isinstance(claim, Replayed):
            return _after(ProjectionEvent(projected), _one(claim.completed))
        recording: Recording = claim
        # What a parked call stores to be re-projected on any router (item and turn).
        origin = router_pb2.ExecuteRequest(item=request.item, turn=request.turn)
        events = execute_call(projected, turn, ctx, origin.SerializeToString(), recording.bind)
        return recording.wrap(self._redacted(events))

    def _check_environments(
        self, caller: Caller, projected: ProjectedCall, thread: ThreadState
    ) -> None:
        """PERMISSION_DENIED before anything runs on an environment the caller may not use:
        every tool's path to an environment is checked (shell elements, the apply_patch
        tool, and the session a write_stdin targets)."""
        outcome = projected.outcome
        if isinstance(outcome, ShellCall):
            for element in outcome.elements:
                self._app.check_environment(caller, element.handler.environment_id)
        elif isinstance(outcome, ApplyPatchToolCall):
            self._app.check_environment(caller, outcome.environment_id)
        elif isinstance(outcome, WriteStdinCall):
            session = thread.sessions.get(outcome.params.session_id)
            if session is not None:
                self._app.check_environment(caller, session.meta.environment_id)


async def _after(
    first: ExecuteEvent, rest: AsyncIterator[ExecuteEvent]
) -> AsyncIterator[ExecuteEvent]:
    yield first
    async for event in rest:
        yield event


async def _drain(events: AsyncIterator[ExecuteEvent]) -> None:
    async for _ in events:
        pass


async def _one(event: ExecuteEvent) -> AsyncIterator[ExecuteEvent]:
    yield event


def _inline(item: str | ToolCall, turn: RouterTurn) -> bool:
    """Whether projecting `item` is cheap and never blocks, so it may run on the loop."""
    # A remote environment's filesystem (apply_patch verification) blocks on an RPC that
    # needs this very loop; apply_patch reads local files. Both stay off the loop.
    if any(env.remote for env in turn.handler.environments):
        return False
    if isinstance(item, str):
        text = item
    else:
        text = item.tool_name.name + item.arguments + item.input + item.query
    if len(text) > INLINE_PROJECT_MAX_CHARS:
        return False
    return "apply_patch" not in text and "applypatch" not in text


def _labels(projected: ProjectedCall | None) -> tuple[str | None, str | None]:
    """Metric labels of a call: tool name and environment (bounded later by Metrics)."""
    if projected is None or projected.tool_name is None:
        return None, None
    outcome = projected.outcome
    env = outcome.elements[0].handler.environment_id if isinstance(outcome, ShellCall) else None
    return projected.tool_name.name, env
