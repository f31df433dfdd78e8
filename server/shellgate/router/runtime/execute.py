"""The Execute stream driver: a projected call, or its resumption, as a stream of events.

Every path ends in exactly one `CompletedEvent` — or one `ApprovalRequiredEvent` when the
call parks for approval — so call/output pairing never breaks (spec 06 §3, §4). The call's
states and transitions are in `call_state`; each element goes through the `orchestrator`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from shellgate.common.errors import (
    InvalidArgumentError,
    ServiceError,
    SharedStateUnavailableError,
)
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import ProjectedCall
from shellgate.router.runtime.call_runner import CallRunner
from shellgate.router.runtime.call_state import Answer, AwaitingApproval, Call, Running, resume
from shellgate.router.runtime.call_stream import CallStream, coalesces
from shellgate.router.runtime.context import RuntimeContext
from shellgate.router.runtime.events import ApprovalDecision, ExecuteEvent, ProjectionEvent

__all__ = ["execute_call", "resume_call"]

_log = logging.getLogger(__name__)


async def execute_call(
    projected: ProjectedCall, turn: RouterTurn, ctx: RuntimeContext
) -> AsyncIterator[ExecuteEvent]:
    """Run a new call: `projection`, then its events, ending in completed/approval_required."""
    record = Call(projected, turn, started_at=time.monotonic())
    # The call starts before the projection is sent: sending it is a write the client must
    # acknowledge, and the spawn need not wait for that (the projection still comes first).
    async for event in _drive(record, ctx, Running(), None, first=ProjectionEvent(projected)):
        yield event


async def resume_call(
    approval_id: str, decision: ApprovalDecision, ctx: RuntimeContext
) -> AsyncIterator[ExecuteEvent]:
    """Continue a parked call where it stopped; unknown/expired id → NOT_FOUND."""
    pending = await ctx.thread.take_pending(approval_id)
    parked = pending.payload
    if not isinstance(parked, AwaitingApproval):  # pragma: no cover - only calls are parked
        raise TypeError("pending payload is not a parked call")
    try:
        running, answer = resume(parked, decision)
    except InvalidArgumentError:
        # Put it back: a wrong answer must not lose the call.
        await ctx.thread.put_back(pending)
        raise
    async for event in _drive(parked.call, ctx, running, answer):
        yield event


async def _drive(
    record: Call,
    ctx: RuntimeContext,
    state: Running,
    answer: Answer | None,
    first: ExecuteEvent | None = None,
) -> AsyncIterator[ExecuteEvent]:
    # The call runs as its own task and emits into a bounded stream this generator drains
    # (call_stream: the output budget, coalescing and the classic reader's pacing).
    coalesce = coalesces(record.projected)
    stream = CallStream(coalesce=coalesce)
    call = ctx.thread.begin_call(record.projected.call_id)

    async def run() -> None:
        room = stream.room if coalesce else None
        runner = CallRunner(record, ctx, stream.emit, call.interrupt, room, state)
        try:
            await runner.run(answer)
        except Exception as exc:
            # Pairing must survive our own bugs: the model still gets an output. A service
            # error (a limit crossed in a race) is expected: no trace.
            if isinstance(exc, SharedStateUnavailableError):
                # Counted and logged (rate-limited) by the store monitor: no trace per call.
                _log.debug("call %s failed: %s", record.projected.call_id, exc)
            elif isinstance(exc, ServiceError):
                _log.warning("call %s failed: %s", record.projected.call_id, exc)
            else:
                _log.exception("call %s failed", record.projected.call_id)
            if not stream.ended:
                # Service errors (e.g. the shared store is down) have a safe, clear message.
                detail = str(exc) if isinstance(exc, ServiceError) else type(exc).__name__
                runner.fail(f"execution error: {detail}")
        finally:
            stream.close()

    # Owned by this generator: cancelled and awaited in the finally below, so no call
    # outlives its Execute.
    task = asyncio.create_task(run(), name=f"execute-{record.projected.call_id}")
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
            if stream.dropped_chunks:
                _log.info(
                    "call %s: %d output bytes in %d chunks not streamed (client too slow)",
                    record.projected.call_id, stream.dropped_bytes, stream.dropped_chunks,
                )  # fmt: skip
