"""The Execute stream driver: a projected call, or its resumption, as a stream of events.

Every path ends in exactly one `CompletedEvent` — or one `ApprovalRequiredEvent` when the
call parks for approval — so call/output pairing never breaks (spec 06 §3, §4). The call's
states and transitions are in `call_state`; each element goes through the `orchestrator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable

from shellgate.common.errors import InvalidArgumentError, ServiceError
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import ProjectedCall, ShellCall
from shellgate.router.runtime.call_runner import CallRunner
from shellgate.router.runtime.call_state import Answer, AwaitingApproval, Call, Running, resume
from shellgate.router.runtime.context import RuntimeContext
from shellgate.router.runtime.events import (
    ApprovalDecision,
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    ProjectionEvent,
)

__all__ = ["execute_call", "resume_call"]

_DONE = object()
# Streamed output waiting for a slow client, per call (spec 06 §4 keeps the final text).
MAX_QUEUED_OUTPUT_BYTES = 8 * 1024 * 1024
# Largest message a backlog of output is merged into (well under gRPC's 4 MiB default).
COALESCED_OUTPUT_BYTES = 1024 * 1024
# A classic command's reader pauses while this much output waits for the client (two full
# merged messages), so a fast producer is paced by the client instead of having its
# stream output dropped at MAX_QUEUED_OUTPUT_BYTES.
PACED_OUTPUT_BYTES = 2 * 1024 * 1024
# How long one pause may wait for the client to take a message; a client that reads
# nothing for longer no longer holds the command back (its stream loses chunks instead).
OUTPUT_STALL_S = 0.5
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


class _PendingOutput:
    """Output chunks of one element and stream, queued but not sent yet: sent as one."""

    __slots__ = ("element_index", "parts", "seq", "size", "stream")

    def __init__(self, event: OutputEvent, seq: int) -> None:
        self.element_index = event.element_index
        self.stream = event.stream
        self.seq = seq
        self.parts = [event.data]
        self.size = len(event.data)

    def event(self) -> OutputEvent:
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        return OutputEvent(self.element_index, self.stream, self.seq, data)


def _coalesces(projected: ProjectedCall) -> bool:
    # Only classic commands: their seqs are per call, so a merged chunk can take one seq
    # and later ones shift down. A unified session's seqs continue across calls, where a
    # shift would read as lost output.
    outcome = projected.outcome
    return isinstance(outcome, ShellCall) and outcome.tool != "exec_command"


async def _drive(
    record: Call,
    ctx: RuntimeContext,
    state: Running,
    answer: Answer | None,
    first: ExecuteEvent | None = None,
) -> AsyncIterator[ExecuteEvent]:
    # A plain deque with one wakeup future: output arriving while the client is behind is
    # appended to the newest queued chunk (up to COALESCED_OUTPUT_BYTES), so a fast
    # producer costs one message per backlog instead of one per pipe read.
    queue: deque[object] = deque()
    wakeup: list[asyncio.Future[None]] = []
    loop = asyncio.get_running_loop()
    call = ctx.thread.begin_call(record.projected.call_id)
    coalesce = _coalesces(record.projected)
    # Per element: chunks merged into an earlier one, so later seqs stay contiguous.
    absorbed: dict[int, int] = {}

    ended = False
    queued_output = 0
    # Paced reading (classic only): set while the queue is below PACED_OUTPUT_BYTES.
    room_event = asyncio.Event()
    room_event.set()
    stalled = False

    async def wait_room() -> None:
        nonlocal stalled
        try:
            await asyncio.wait_for(room_event.wait(), OUTPUT_STALL_S)
        except TimeoutError:
            stalled = True

    def room() -> Awaitable[None] | None:
        if queued_output < PACED_OUTPUT_BYTES or stalled:
            return None
        room_event.clear()
        return wait_room()

    def put(item: object) -> None:
        queue.append(item)
        if wakeup and not wakeup[0].done():
            wakeup[0].set_result(None)

    def emit(event: ExecuteEvent) -> None:
        nonlocal ended, queued_output
        ended = ended or isinstance(event, CompletedEvent | ApprovalRequiredEvent)
        if not isinstance(event, OutputEvent):
            put(event)
            return
        # A client that does not read must not make the router buffer without bound:
        # streamed chunks past the budget are dropped (seq gaps show it); the final
        # output text is unaffected.
        size = len(event.data)
        if queued_output + size > MAX_QUEUED_OUTPUT_BYTES:
            return
        queued_output += size
        if not coalesce:
            put(event)
            return
        index = event.element_index
        skipped = absorbed.get(index, 0)
        tail = queue[-1] if queue else None
        if (
            isinstance(tail, _PendingOutput)
            and tail.element_index == index
            and tail.stream is event.stream
            and tail.seq + skipped + 1 == event.seq
            and tail.size + size <= COALESCED_OUTPUT_BYTES
        ):
            tail.parts.append(event.data)
            tail.size += size
            absorbed[index] = skipped + 1
            return
        put(_PendingOutput(event, event.seq - skipped))

    async def run() -> None:
        runner = CallRunner(record, ctx, emit, call.interrupt, room if coalesce else None, state)
        try:
            await runner.run(answer)
        except Exception as exc:
            # Pairing must survive our own bugs: the model still gets an output.
            _log.exception("call %s failed", record.projected.call_id)
            if not ended:
                # Service errors (e.g. the shared store is down) have a safe, clear message.
                detail = str(exc) if isinstance(exc, ServiceError) else type(exc).__name__
                runner.fail(f"execution error: {detail}")
        finally:
            put(_DONE)

    # Owned by this generator: the `finally` below cancels and awaits it when the stream
    # ends early, so no call outlives its Execute.
    task = asyncio.create_task(run(), name=f"execute-{record.projected.call_id}")
    try:
        if first is not None:
            # Let the call reach its first real wait (the spawn) before the first event is
            # converted and written: the process then starts while the projection goes out.
            await asyncio.sleep(0)
            yield first
        while True:
            if not queue:
                waiter = loop.create_future()
                wakeup.append(waiter)
                try:
                    await waiter
                finally:
                    wakeup.clear()
                continue
            item = queue.popleft()
            if item is _DONE:
                break
            if isinstance(item, _PendingOutput):
                queued_output -= item.size
                item = item.event()
                if queued_output < PACED_OUTPUT_BYTES:
                    stalled = False
                    room_event.set()
            elif isinstance(item, OutputEvent):
                queued_output -= len(item.data)
            yield item  # type: ignore[misc]
    finally:
        # A cancelled stream cancels the call: a classic command's group is killed by its
        # runner; a stored unified session survives (spec 06 §4).
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        ctx.thread.end_call(call)
