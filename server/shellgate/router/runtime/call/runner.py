"""Running one call: each element through the orchestrator, its state machine, its events.

The Execute driver (`execute.py`) owns the stream and the task; a `CallRunner` runs the
call inside that task, moves its state (`call_state`) after every element, and emits what
each state means: approval_required for a parked call, one completed for an ended one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from shellgate.common.errors import ServiceError
from shellgate.common.tracing import current_trace_context
from shellgate.router.decode.tool_call import PayloadKind
from shellgate.router.output.texts import abort_message
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
from shellgate.router.runtime.approvals.board import BOARD_SLOT
from shellgate.router.runtime.approvals.operator_wait import Decided
from shellgate.router.runtime.approvals.parked_codec import encode_parked
from shellgate.router.runtime.approvals.route import approval_route
from shellgate.router.runtime.approvals.vocabulary import ApprovalRoute, DecisionSource
from shellgate.router.runtime.call.context import Emit, OutputRoom, RuntimeContext, RuntimeRequest
from shellgate.router.runtime.call.events import (
    ApprovalRequiredEvent,
    CompletedEvent,
    Termination,
    output_item_json,
)
from shellgate.router.runtime.call.network_ask import network_asker
from shellgate.router.runtime.call.orchestrator import ToolRuntime, orchestrate
from shellgate.router.runtime.call.state import (
    Aborted,
    Answer,
    Approved,
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
from shellgate.router.runtime.environments.egress import egress_asker
from shellgate.router.runtime.runtimes.apply_patch import element_patch, tool_call_patch
from shellgate.router.runtime.runtimes.classic import ShellRuntime
from shellgate.router.runtime.runtimes.unified_exec import UnifiedExecRuntime, run_write_stdin

__all__ = ["CallRunner", "aborted", "no_tool_call_completed"]


class CallRunner:
    """Runs a call for one Execute stream: holds its current state, turns outcomes into events."""

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
        # Who settled the operator-routed approval the call continues from (audit).
        self.decided: Decided | None = None

    def request(self, index: int, answer: Answer | None = None) -> RuntimeRequest:
        """What the runtime of element `index` runs with (resuming from `answer`)."""
        projected = self.call.projected
        name = projected.tool_name
        return RuntimeRequest(
            self.ctx, self.call.turn, projected.call_id, index, self.emit, self.interrupt,
            self.output_room, exec_frame=name is not None and name.name == "exec_command",
            tool=name.name if name is not None else "",
            approval_source=self.decided.source if self.decided else DecisionSource.CALLER,
            approver=self.decided.who if self.decided else self.ctx.caller_subject,
            approved_cwd=answer.cwd_identity if isinstance(answer, Approved) else None,
        )  # fmt: skip

    async def run(self, answer: Answer | None) -> None:
        """Run the call from its current state to its end, or until it parks.

        An operator-routed approval does not park: the call waits here for the operator
        (operator_wait) and continues in the same stream with the decision's answer.
        """
        outcome = self.call.projected.outcome
        if isinstance(outcome, NoToolCallOutcome):
            self.emit(no_tool_call_completed(outcome.reason))
            return
        await self._dispatch(answer)
        while (
            isinstance(self.state, AwaitingApproval)
            and self._route(self.state) is ApprovalRoute.OPERATOR
        ):
            self.decided = await self._await_operator(self.state)
            running, answer = resume(self.state, self.decided.decision)
            self.state = running
            await self._dispatch(answer)
        match self.state:
            case AwaitingApproval():
                await self._park(self.state)
            case Ended():
                self._end(self.state)
            case Running():
                raise InvalidTransition("the call stopped while running")

    async def _dispatch(self, answer: Answer | None) -> None:
        outcome = self.call.projected.outcome
        match outcome:
            case ToolErrorOutcome(text=text):
                self._advance(Finished(text, Termination.TOOL_ERROR, success=False))
            case WriteStdinCall():
                self._advance(await run_write_stdin(self.request(0), outcome))
            case ApplyPatchToolCall():
                request = self.request(0, answer)
                self._advance(await _element(tool_call_patch(request, outcome), request, answer))
            case ShellCall():
                await self._shell(outcome, answer)

    def _route(self, awaiting: AwaitingApproval) -> ApprovalRoute:
        operator = self.ctx.operator
        return approval_route(
            operator.settings if operator is not None else None,
            awaiting.parked.subject.environment_id,
            self.call.turn.operator_route,
        )

    async def await_operator(
        self, awaiting: AwaitingApproval, *, caller_decides: bool = False
    ) -> Decided:
        """Wait for an operator's decision on `awaiting` (the call's own, or a running
        command's network request: `network_ask`); `caller_decides`: the caller's live one."""
        return await self._await_operator(awaiting, caller_decides=caller_decides)

    async def _await_operator(
        self, awaiting: AwaitingApproval, *, caller_decides: bool = False
    ) -> Decided:
        operator = self.ctx.operator
        assert operator is not None
        # The approval lives on the board only; the thread holds a slot without the call
        # (board.BOARD_SLOT) so the pending caps count it. A caller's resume of its id is
        # refused by the board entry (route.route_taken), or by the empty slot after it.
        pending = await self.ctx.thread.add_pending(self.call.projected.call_id, BOARD_SLOT)
        try:
            details = self._approval_event(awaiting, pending.approval_id, 0)
            return await operator.wait(
                awaiting, details, self.ctx.caller_subject, self.emit, self.interrupt,
                caller_decides=caller_decides,
            )  # fmt: skip
        finally:
            with contextlib.suppress(ServiceError):
                await self.ctx.thread.take_pending(pending.approval_id)

    async def _shell(self, call: ShellCall, answer: Answer | None) -> None:
        while isinstance(self.state, Running):
            index = self.state.index
            if self.interrupt.is_set():
                self._advance(Aborted())
                continue
            request = self.request(index, answer)
            # The egress proxy asks about this element's network requests (network_ask).
            asker = network_asker(self, index)
            asking = egress_asker.set(asker.ask)
            try:
                outcome = await _element(_runtime(call, request), request, answer)
            finally:
                egress_asker.reset(asking)
                asker.close()
            self._advance(outcome)
            # The decision answered this element only; later elements meet their own gates.
            answer = None

    def _advance(self, outcome: ElementOutcome) -> None:
        self.state = advance(self.call, self.state, outcome)

    def fail(self, text: str) -> None:
        """A bug stopped the call: answer with `text` (the stream must still pair)."""
        self.state = crash(self.state, text)
        self._end(self.state)

    async def _park(self, awaiting: AwaitingApproval) -> None:
        # Stored as data, not as this object: any router of the thread may resume it.
        # When and under which span it parked: the resume (any replica) records the wait.
        stored = encode_parked(awaiting, time.time(), current_trace_context())
        pending = await self.ctx.thread.add_pending(self.call.projected.call_id, stored)
        expires_in_ms = round((pending.expires_at - pending.created_at) * 1000)
        self.emit(self._approval_event(awaiting, pending.approval_id, expires_in_ms))

    def _approval_event(
        self, awaiting: AwaitingApproval, approval_id: str, expires_in_ms: int
    ) -> ApprovalRequiredEvent:
        parked, subject = awaiting.parked, awaiting.parked.subject
        return ApprovalRequiredEvent(
            approval_id=approval_id,
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
            expires_in_ms=expires_in_ms,
            network=parked.network,
        )

    def _end(self, ended: Ended) -> None:
        match ended.result:
            case Finished() as done:
                self._complete(done)
            case Aborted(session_id=session_id, warnings=warnings):
                self.emit(aborted(self.call, session_id, warnings))

    def _complete(self, result: Finished) -> None:
        self.emit(_completed(self.call, result))


def no_tool_call_completed(reason: str) -> CompletedEvent:
    """The completed event of an item that is no tool call: no output item, the reason."""
    return CompletedEvent(
        "", "", False, None, None, 0, None, False, Termination.NO_TOOL_CALL, (), reason=reason
    )


def aborted(
    call: Call, session_id: int | None = None, warnings: tuple[str, ...] = ()
) -> CompletedEvent:
    """The abort output of a call (spec 05 §4), with the call's elapsed wall time."""
    elapsed_ms = (time.monotonic() - call.started_at) * 1000
    text = abort_message(_tool_label(call.projected), elapsed_ms)
    result = Finished(
        text, Termination.CANCELLED, success=False, session_id=session_id, warnings=warnings
    )
    return _completed(call, result)


def _completed(call: Call, result: Finished) -> CompletedEvent:
    projected = call.projected
    custom = projected.payload_kind is PayloadKind.CUSTOM
    return CompletedEvent(
        output_item_json=output_item_json(projected.call_id, result.text, custom=custom),
        output_text=result.text,
        success=result.success,
        exit_code=result.exit_code,
        session_id=result.session_id,
        wall_time_ms=round((time.monotonic() - call.started_at) * 1000),
        original_token_count=result.original_token_count,
        truncated=result.truncated,
        termination=result.termination,
        model_warnings=result.warnings,
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
