"""The Execute stream driver: a projected call, or its resumption, as a stream of events.

Every path ends in exactly one `CompletedEvent` — or one `ApprovalRequiredEvent` when the
call parks for the caller's approval — so call/output pairing never breaks (spec 06 §3,
§4); an operator-routed approval keeps the stream open (`operator_wait`, docs/approvals.md). The call's
states and transitions are in `call_state`; each element goes through the `orchestrator`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from shellgate.common.errors import (
    InvalidArgumentError,
    OperatorRouteError,
    ServiceError,
    SharedStateUnavailableError,
)
from shellgate.common.tasks import cancel_and_wait
from shellgate.common.tracing import record_approval_wait
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import ProjectedCall
from shellgate.router.runtime.approvals.board import BOARD_SLOT
from shellgate.router.runtime.approvals.offer import require_offered
from shellgate.router.runtime.approvals.parked_codec import decode_parked, rebuild
from shellgate.router.runtime.approvals.route import route_taken
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    ApprovalRoute,
    DecisionSource,
)
from shellgate.router.runtime.call.context import RuntimeContext
from shellgate.router.runtime.call.events import ExecuteEvent, ProjectionEvent
from shellgate.router.runtime.call.runner import CallRunner
from shellgate.router.runtime.call.state import Answer, AwaitingApproval, Call, Running, resume
from shellgate.router.runtime.call.stream import CallStream, coalesces

__all__ = ["OnStart", "Reproject", "execute_call", "resume_call"]

# Projects a parked call's stored wire request again (the servicer's pipeline).
Reproject = Callable[[bytes], Awaitable[tuple[ProjectedCall, RouterTurn]]]
# Told the call before it runs (call_ledger.Recording.bind: what a cancelled call stores).
OnStart = Callable[[Call], Awaitable[None]]

_log = logging.getLogger(__name__)


async def execute_call(
    projected: ProjectedCall,
    turn: RouterTurn,
    ctx: RuntimeContext,
    origin: bytes = b"",
    on_start: OnStart | None = None,
) -> AsyncIterator[ExecuteEvent]:
    """Run a new call: `projection`, then its events, ending in completed/approval_required.

    `origin` is the wire request that projected it, stored if the call parks.
    """
    record = Call(projected, turn, time.monotonic(), time.time(), origin)
    if on_start is not None:
        await on_start(record)
    # The call starts before the projection is sent: sending it is a write the client must
    # acknowledge, and the spawn need not wait for that (the projection still comes first).
    async for event in _drive(record, ctx, Running(), None, first=ProjectionEvent(projected)):
        yield event


async def resume_call(
    approval_id: str,
    decision: ApprovalDecision,
    ctx: RuntimeContext,
    reproject: Reproject,
    on_start: OnStart | None = None,
) -> AsyncIterator[ExecuteEvent]:
    """Continue a parked call where it stopped, on any router; unknown/expired id → NOT_FOUND.

    The record is taken atomically (one resumer wins), its stored request re-projected and
    checked against what was parked (parked_codec.rebuild), then the call continues.
    """
    board = ctx.operator.board if ctx.operator is not None else None
    if await route_taken(board, approval_id) is ApprovalRoute.OPERATOR:
        # Only an operator decides an operator-routed approval (ApprovalService).
        raise OperatorRouteError(f"approval {approval_id} is decided by an operator")
    pending = await ctx.thread.take_pending(approval_id)
    if pending.payload == BOARD_SLOT:
        # Its board entry is gone (settled long ago, or its replica died): still not ours.
        raise OperatorRouteError(f"approval {approval_id} is decided by an operator")
    stored = decode_parked(pending.payload)
    try:
        # Checked before the re-projection: a wrong answer costs no pipeline run.
        require_offered(decision, stored.parked.offered)
    except InvalidArgumentError:
        # Put it back: a wrong answer must not lose the call.
        await ctx.thread.put_back(pending)
        raise
    projected, turn = await reproject(stored.origin)
    parked: AwaitingApproval = rebuild(stored, projected, turn)
    running, answer = resume(parked, decision)
    # The wait spans two RPCs (maybe two replicas): a span from the stored parking time,
    # linked to the span that parked it. `caller`: this Execute's resume decided it.
    parked_at = stored.started_wall if stored.parked_at is None else stored.parked_at
    record_approval_wait(
        parked_at, time.time(), decision.value, DecisionSource.CALLER.value, stored.trace_context
    )
    if on_start is not None:
        await on_start(parked.call)
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
        runner = CallRunner(record, ctx, stream.emit, call.interrupt, stream.room, state)
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
