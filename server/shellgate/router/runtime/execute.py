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

from shellgate.router.decode.tool_call import PayloadKind
from shellgate.router.output.texts import abort_message
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
from shellgate.router.runtime.call_state import (
    Aborted,
    Answer,
    AwaitingApproval,
    Call,
    CallState,
    ElementOutcome,
    Ended,
    Finished,
    InvalidTransition,
    Running,
    advance,
    crash,
    resume,
)
from shellgate.router.runtime.context import Emit, OutputRoom, RuntimeContext, RuntimeRequest
from shellgate.router.runtime.errors import InvalidRuntimeArgumentError, RuntimeServiceError
from shellgate.router.runtime.events import (
    ApprovalDecision,
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    ProjectionEvent,
    Termination,
    output_item_json,
)
from shellgate.router.runtime.orchestrator import ToolRuntime, orchestrate
from shellgate.router.runtime.runtimes.apply_patch import element_patch, tool_call_patch
from shellgate.router.runtime.runtimes.classic import ShellRuntime
from shellgate.router.runtime.runtimes.unified_exec import UnifiedExecRuntime, run_write_stdin

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
    except InvalidRuntimeArgumentError:
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
        execution = _Execution(record, ctx, emit, call.interrupt, room if coalesce else None, state)
        try:
            await execution.run(answer)
        except Exception as exc:
            # Pairing must survive our own bugs: the model still gets an output.
            _log.exception("call %s failed", record.projected.call_id)
            if not ended:
                # Service errors (e.g. the shared store is down) have a safe, clear message.
                detail = str(exc) if isinstance(exc, RuntimeServiceError) else type(exc).__name__
                execution.fail(f"execution error: {detail}")
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


class _Execution:
    """One Execute stream's run of a call: it holds the call's current state and reports it."""

    def __init__(
        self,
        call: Call,
        ctx: RuntimeContext,
        emit: Emit,
        interrupt: asyncio.Event,
        output_room: OutputRoom | None,
        state: CallState,
    ) -> None:
        self.call = call
        self.ctx = ctx
        self.emit = emit
        self.interrupt = interrupt
        self.output_room = output_room
        # Replaced by each transition; read when a bug ends the call (`fail`).
        self.state = state

    def request(self, index: int) -> RuntimeRequest:
        """What the runtime of element `index` runs with."""
        projected = self.call.projected
        name = projected.tool_name
        return RuntimeRequest(
            self.ctx, self.call.turn, projected.call_id, index, self.emit, self.interrupt,
            self.output_room, exec_frame=name is not None and name.name == "exec_command",
        )  # fmt: skip

    async def run(self, answer: Answer | None) -> None:
        """Run the call from its current state to its end, or until it parks."""
        outcome = self.call.projected.outcome
        match outcome:
            case NoToolCallOutcome():
                self.emit(
                    CompletedEvent("", "", False, None, None, 0, None, False, Termination.NONE, ())
                )
                return
            case ToolErrorOutcome(text=text):
                self._advance(Finished(text, Termination.TOOL_ERROR, success=False))
            case WriteStdinCall():
                self._advance(await run_write_stdin(self.request(0), outcome))
            case ApplyPatchToolCall():
                request = self.request(0)
                self._advance(await _element(tool_call_patch(request, outcome), request, answer))
            case ShellCall():
                await self._shell(outcome, answer)
        match self.state:
            case AwaitingApproval():
                await self._park(self.state)
            case Ended():
                self._end(self.state)
            case Running():
                raise InvalidTransition("the call stopped while running")

    async def _shell(self, call: ShellCall, answer: Answer | None) -> None:
        while isinstance(self.state, Running):
            index = self.state.index
            if self.interrupt.is_set():
                self._advance(Aborted())
                continue
            request = self.request(index)
            self._advance(await _element(_runtime(call, request), request, answer))
            # The decision answered this element only; later elements meet their own gates.
            answer = None

    def _advance(self, outcome: ElementOutcome) -> None:
        self.state = advance(self.call, self.state, outcome)

    def fail(self, text: str) -> None:
        """A bug stopped the call: answer with `text` (the stream must still pair)."""
        self.state = crash(self.state, text)
        self._end(self.state)

    async def _park(self, awaiting: AwaitingApproval) -> None:
        parked, subject = awaiting.parked, awaiting.parked.subject
        pending = await self.ctx.thread.add_pending(self.call.projected.call_id, awaiting)
        self.emit(
            ApprovalRequiredEvent(
                approval_id=pending.approval_id,
                call_id=self.call.projected.call_id,
                kind=parked.kind,
                element_index=parked.element_index,
                argv=subject.argv,
                cwd=subject.cwd,
                environment_id=subject.environment_id,
                reason=parked.reason,
                proposed_amendment=parked.amendment,
                approval_key_digest=parked.key,
                available_decisions=parked.offered,
                element=subject.element,
                expires_in_ms=round((pending.expires_at - pending.created_at) * 1000),
            )
        )

    def _end(self, ended: Ended) -> None:
        match ended.result:
            case Finished() as done:
                self._complete(done)
            case Aborted(session_id=session_id, warnings=warnings):
                elapsed_ms = (time.monotonic() - self.call.started_at) * 1000
                text = abort_message(_tool_label(self.call.projected), elapsed_ms)
                self._complete(
                    Finished(
                        text, Termination.CANCELLED, success=False, session_id=session_id,
                        warnings=warnings,
                    )
                )  # fmt: skip

    def _complete(self, result: Finished) -> None:
        projected = self.call.projected
        custom = projected.payload_kind is PayloadKind.CUSTOM
        self.emit(
            CompletedEvent(
                output_item_json=output_item_json(projected.call_id, result.text, custom=custom),
                output_text=result.text,
                success=result.success,
                exit_code=result.exit_code,
                session_id=result.session_id,
                wall_time_ms=round((time.monotonic() - self.call.started_at) * 1000),
                original_token_count=result.original_token_count,
                truncated=result.truncated,
                termination=result.termination,
                model_warnings=result.warnings,
            )
        )


def _runtime(call: ShellCall, request: RuntimeRequest) -> ToolRuntime | Finished:
    """The runtime of a shell call's element (or an apply_patch's answer before approval)."""
    match call.elements[request.element_index]:
        case PatchElement() as patch:
            return element_patch(request, patch, unified_frame=call.tool == "exec_command")
        case CommandElement() as command if request.exec_frame:
            return UnifiedExecRuntime(request, command)
        case CommandElement() as command:
            return ShellRuntime(request, command)


async def _element(
    runtime: ToolRuntime | Finished, request: RuntimeRequest, answer: Answer | None
) -> ElementOutcome:
    if isinstance(runtime, Finished):
        return runtime
    return await orchestrate(runtime, request, answer)


def _tool_label(projected: ProjectedCall) -> str:
    """The tool named in the abort text."""
    match projected.outcome:
        case ShellCall(tool=tool):
            return tool
        case WriteStdinCall():
            return "write_stdin"
        case _:
            return "apply_patch"
