"""The orchestrator: run a projected call (or resume one) as a stream of domain events.

Every path ends in exactly one `CompletedEvent` — or one `ApprovalRequiredEvent` when the
call parks for approval — so call/output pairing never breaks (spec 06 §3, §4).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from shellgate.common.process.base import OutputChunk
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.decode.tool_call import PayloadKind
from shellgate.router.output.texts import abort_message, format_batch_output
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import (
    ApplyPatchToolCall,
    CommandElement,
    NoToolCallOutcome,
    PatchElement,
    ProjectedCall,
    ShellCall,
    ToolErrorOutcome,
    WriteStdinCall,
)
from shellgate.router.runtime.call_stream import CallStream, coalesces
from shellgate.router.runtime.elements import run_command_element, run_patch
from shellgate.router.runtime.errors import InvalidRuntimeArgumentError, RuntimeServiceError
from shellgate.router.runtime.events import (
    ApprovalDecision,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    ProjectionEvent,
    TerminalInteractionEvent,
    Termination,
    output_item_json,
)
from shellgate.router.runtime.gating import writable_roots
from shellgate.router.runtime.state import CallState, ElementResult, Emit, RuntimeContext
from shellgate.router.runtime.unified_exec import write_stdin

__all__ = ["execute_call", "resume_call"]

_log = logging.getLogger(__name__)


async def execute_call(
    projected: ProjectedCall, turn: RouterTurn, ctx: RuntimeContext
) -> AsyncIterator[ExecuteEvent]:
    """Run a new call: `projection`, then its events, ending in completed/approval_required."""
    state = CallState(projected, turn, started_at=time.monotonic())
    # The call starts before the projection is sent: sending it is a write the client must
    # acknowledge, and the spawn need not wait for that (the projection still comes first).
    async for event in _drive(state, ctx, None, first=ProjectionEvent(projected)):
        yield event


async def resume_call(
    approval_id: str, decision: ApprovalDecision, ctx: RuntimeContext
) -> AsyncIterator[ExecuteEvent]:
    """Continue a parked call where it stopped; unknown/expired id → NOT_FOUND."""
    pending = await ctx.thread.take_pending(approval_id)
    state = pending.payload
    if not isinstance(state, CallState):  # pragma: no cover - only CallState is parked
        raise TypeError("pending payload is not a call state")
    if decision not in state.offered:
        # Put it back: a wrong answer must not lose the call.
        await ctx.thread.put_back(pending)
        raise InvalidRuntimeArgumentError(f"decision: {decision} is not on offer")
    async for event in _drive(state, ctx, decision):
        yield event


async def _drive(
    state: CallState,
    ctx: RuntimeContext,
    decision: ApprovalDecision | None,
    first: ExecuteEvent | None = None,
) -> AsyncIterator[ExecuteEvent]:
    # The call runs as its own task and emits into a bounded stream this generator drains
    # (call_stream: the output budget, coalescing and the classic reader's pacing).
    stream = CallStream(coalesce=coalesces(state.projected))
    call = ctx.thread.begin_call(state.projected.call_id)
    state.interrupt = call.interrupt
    emit = stream.emit

    async def run() -> None:
        state.output_room = stream.room
        try:
            await _run(state, ctx, decision, emit)
        except Exception as exc:
            # Pairing must survive our own bugs: the model still gets an output.
            _log.exception("call %s failed", state.projected.call_id)
            if not stream.ended:
                # Service errors (e.g. the shared store is down) have a safe, clear message.
                detail = str(exc) if isinstance(exc, RuntimeServiceError) else type(exc).__name__
                text = f"execution error: {detail}"
                failure = ElementResult(text, True, Termination.TOOL_ERROR, success=False)
                _complete(state, emit, failure, text)
        finally:
            stream.close()

    # Owned by this generator: cancelled and awaited in the finally below.
    task = asyncio.create_task(run(), name=f"execute-{state.projected.call_id}")
    try:
        if first is not None:
            # Let the call reach its first real wait (the spawn) before the first event is
            # converted and written: the process then starts while the projection goes out.
            await asyncio.sleep(0)
            yield first
        while (event := await stream.receive()) is not None:
            yield event
    finally:
        try:
            # A cancelled stream cancels the call: a classic command's group is killed by its
            # runner; a stored unified session survives (spec 06 §4).
            await cancel_and_wait(task, log=_log)
        finally:
            ctx.thread.end_call(call)
            state.interrupt = None
            if stream.dropped_chunks:
                _log.info(
                    "call %s: %d output bytes in %d chunks not streamed (client too slow)",
                    state.projected.call_id, stream.dropped_bytes, stream.dropped_chunks,
                )  # fmt: skip


def _complete(state: CallState, emit: Emit, result: ElementResult, text: str) -> None:
    custom = state.projected.payload_kind is PayloadKind.CUSTOM
    success = result.success if result.success is not None else not result.failed
    emit(
        CompletedEvent(
            output_item_json=output_item_json(state.projected.call_id, text, custom=custom),
            output_text=text,
            success=success,
            exit_code=result.exit_code,
            session_id=result.session_id,
            wall_time_ms=round((time.monotonic() - state.started_at) * 1000),
            original_token_count=result.original_token_count,
            truncated=result.truncated,
            termination=result.termination,
            model_warnings=tuple(state.warnings + result.warnings),
        )
    )


def _abort(state: CallState, emit: Emit, tool: str, result: ElementResult) -> None:
    text = abort_message(tool, (time.monotonic() - state.started_at) * 1000)
    aborted = ElementResult(
        text, True, Termination.CANCELLED, success=False, session_id=result.session_id,
        warnings=result.warnings,
    )  # fmt: skip
    _complete(state, emit, aborted, text)


async def _run(
    state: CallState, ctx: RuntimeContext, decision: ApprovalDecision | None, emit: Emit
) -> None:
    outcome = state.projected.outcome
    if isinstance(outcome, NoToolCallOutcome):
        emit(CompletedEvent("", "", False, None, None, 0, None, False, Termination.NONE, ()))
    elif isinstance(outcome, ToolErrorOutcome):
        result = ElementResult(outcome.text, True, Termination.TOOL_ERROR, success=False)
        _complete(state, emit, result, outcome.text)
    elif isinstance(outcome, WriteStdinCall):
        await _write_stdin(state, ctx, outcome, emit)
    elif isinstance(outcome, ApplyPatchToolCall):
        result = await run_patch(
            state, ctx, decision, emit, result=outcome.result,
            environment_id=outcome.environment_id, roots=(outcome.cwd, "/tmp"), argv=(),
            element=None, unified_frame=False,
        )  # fmt: skip
        _finish_single(state, emit, result, "apply_patch")
    elif isinstance(outcome, ShellCall):
        await _shell(state, ctx, outcome, decision, emit)


def _finish_single(state: CallState, emit: Emit, result: ElementResult, tool: str) -> None:
    if result.paused:
        return
    if result.aborted:
        _abort(state, emit, tool, result)
        return
    _complete(state, emit, result, result.text)


async def _shell(
    state: CallState,
    ctx: RuntimeContext,
    call: ShellCall,
    decision: ApprovalDecision | None,
    emit: Emit,
) -> None:
    failed = False
    while state.index < len(call.elements):
        if state.interrupt is not None and state.interrupt.is_set():
            _abort(state, emit, call.tool, ElementResult("", True, Termination.CANCELLED))
            return
        element = call.elements[state.index]
        if isinstance(element, PatchElement):
            result = await run_patch(
                state, ctx, decision, emit, result=element.result,
                environment_id=element.handler.environment_id,
                roots=writable_roots(element.envelope, ctx.extra_writable_roots),
                argv=element.handler.argv, element=element,
                unified_frame=call.tool == "exec_command",
            )  # fmt: skip
        else:
            assert isinstance(element, CommandElement)
            result = await run_command_element(state, element, ctx, decision, emit)
        # The decision answered this element only; later elements meet their own gates.
        decision = None
        if result.paused:
            return
        if result.aborted:
            _abort(state, emit, call.tool, result)
            return
        state.blocks.append(result.text)
        state.warnings.extend(result.warnings)
        result.warnings = []
        state.last = result
        state.truncated = state.truncated or result.truncated
        if result.failed:
            failed = True
            break
        state.index += 1
    last = state.last
    assert last is not None
    if call.tool == "exec_command" or not call.batch:
        _complete(state, emit, last, last.text)
        return
    not_run = [el.handler.argv[-1] for el in call.elements[state.index + 1 :]] if failed else []
    text = format_batch_output(state.blocks, not_run)
    summary = ElementResult(
        text, failed, last.termination, success=not failed, exit_code=last.exit_code,
        original_token_count=last.original_token_count,
        truncated=state.truncated,
    )  # fmt: skip
    _complete(state, emit, summary, text)


async def _write_stdin(
    state: CallState, ctx: RuntimeContext, call: WriteStdinCall, emit: Emit
) -> None:
    params = call.params

    def on_output(chunk: OutputChunk, seq: int) -> None:
        emit(OutputEvent(0, chunk.stream, seq, chunk.data))

    resp = await write_stdin(
        manager=ctx.thread.sessions, session_id=params.session_id, chars=params.chars,
        yield_time_ms=call.yield_time_ms, policy=call.output_policy, listener=on_output,
        interrupt=state.interrupt, rng=ctx.rng,
    )  # fmt: skip
    if resp.error:
        result = ElementResult(resp.text, True, Termination.TOOL_ERROR, success=False)
        _complete(state, emit, result, resp.text)
        return
    if params.chars or resp.session_id is not None:
        emit(TerminalInteractionEvent(params.session_id, params.chars))
    if resp.interrupted:
        _abort(
            state,
            emit,
            "write_stdin",
            ElementResult("", True, Termination.CANCELLED, session_id=resp.session_id),
        )
        return
    result = ElementResult(
        resp.text, False, resp.termination, success=True, exit_code=resp.exit_code,
        session_id=resp.session_id, original_token_count=resp.original_token_count,
        truncated=resp.truncated,
    )  # fmt: skip
    _complete(state, emit, result, resp.text)
