"""Running one shell element: gate (policy, cache, approval), sandbox, execute, retry."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import EnvironmentNotFoundError
from shellgate.common.process.base import OutputChunk
from shellgate.router.apply_patch import (
    EMPTY_PATCH_REJECTION,
    PATCH_DECLINED,
    ApplyPatchAction,
    CorrectnessError,
    finish_apply_patch,
)
from shellgate.router.output.texts import render_unified_response
from shellgate.router.policy import Forbidden, NeedsApproval, Skip
from shellgate.router.projection import CommandElement, PatchElement
from shellgate.router.runtime.classic import classic_text, run_classic, spawn_failure_text
from shellgate.router.runtime.events import (
    ApprovalDecision,
    ApprovalKind,
    ApprovalRequiredEvent,
    OutputEvent,
    StartedEvent,
    Termination,
)
from shellgate.router.runtime.gating import (
    SANDBOX_RETRY_REASON,
    choose_sandbox,
    offered_decisions,
    patch_approval_digest,
    patch_gate,
    sandbox_retry_allowed,
)
from shellgate.router.runtime.spawn import (
    NO_SANDBOX,
    EnvironmentUnavailableError,
    SandboxSpec,
    Spawner,
    SpawnFailure,
)
from shellgate.router.runtime.state import CallState, ElementResult, Emit, RuntimeContext
from shellgate.router.runtime.unified_exec import exec_command_start, rejected_text
from shellgate.router.runtime.unified_process import OutputListener

__all__ = ["pause", "run_command_element", "run_patch", "turn_env_policy"]

REJECTED_BY_USER = "exec command rejected by user"


def _is_exec(state: CallState) -> bool:
    name = state.projected.tool_name
    return name is not None and name.name == "exec_command"


def _unavailable(state: CallState, exc: EnvironmentUnavailableError) -> ElementResult:
    text = rejected_text(str(exc)) if _is_exec(state) else f"execution error: {exc}"
    return ElementResult(text, True, Termination.ENVIRONMENT_LOST, success=False)


def turn_env_policy(state: CallState, el: CommandElement) -> ShellEnvironmentPolicy:
    """The turn's shell environment policy with the envelope's `set` overrides (05 §5.5)."""
    return replace(state.turn.env_policy, set_pairs=el.envelope.explicit_env_overrides)


def _spawner(ctx: RuntimeContext, environment_id: str) -> Spawner:
    try:
        return ctx.environments.get(environment_id)
    except EnvironmentNotFoundError:
        raise EnvironmentUnavailableError(environment_id, "not configured") from None


async def pause(
    state: CallState,
    ctx: RuntimeContext,
    emit: Emit,
    *,
    kind: ApprovalKind,
    argv: tuple[str, ...],
    cwd: str,
    environment_id: str,
    reason: str,
    amendment: tuple[str, ...] | None,
    digest: str,
    element: CommandElement | PatchElement | None,
) -> ElementResult:
    """Park the call in the thread and emit `approval_required` (the stream then ends)."""
    state.waiting = kind
    state.amendment = amendment
    state.offered = offered_decisions(amendment)
    state.digest = digest
    pending = await ctx.thread.add_pending(state.projected.call_id, state)
    emit(
        ApprovalRequiredEvent(
            approval_id=pending.approval_id,
            call_id=state.projected.call_id,
            kind=kind,
            element_index=state.index,
            argv=argv,
            cwd=cwd,
            environment_id=environment_id,
            reason=reason,
            proposed_amendment=amendment,
            approval_key_digest=digest,
            available_decisions=state.offered,
            element=element,
            expires_in_ms=round((pending.expires_at - pending.created_at) * 1000),
        )
    )
    return ElementResult("", False, Termination.NONE, paused=True)


async def _apply_decision(
    state: CallState, ctx: RuntimeContext, decision: ApprovalDecision
) -> ElementResult | None:
    """Handle the answer for the waiting element; a result means it ends here."""
    kind = state.waiting
    state.waiting = None
    if decision is ApprovalDecision.ABORT:
        return ElementResult("", True, Termination.CANCELLED, aborted=True)
    if decision is ApprovalDecision.DENIED:
        if kind is ApprovalKind.SANDBOX_RETRY and state.retry_result is not None:
            return state.retry_result
        if kind is ApprovalKind.APPLY_PATCH:
            return ElementResult(PATCH_DECLINED, True, Termination.REJECTED, success=False)
        text = rejected_text("rejected by user") if _is_exec(state) else REJECTED_BY_USER
        return ElementResult(text, True, Termination.REJECTED, success=False)
    if decision is ApprovalDecision.APPROVED_FOR_SESSION and kind is not ApprovalKind.SANDBOX_RETRY:
        await ctx.thread.approve_for_session(state.digest)
    store = ctx.policy_store
    if decision is ApprovalDecision.APPROVED_WITH_AMENDMENT and state.amendment and store:
        # Blocking file lock + atomic rename: keep it off the event loop.
        await asyncio.to_thread(store.append_prefix_rule, state.amendment)
    return None


async def run_command_element(
    state: CallState,
    el: CommandElement,
    ctx: RuntimeContext,
    decision: ApprovalDecision | None,
    emit: Emit,
) -> ElementResult:
    """Gate and run one ordinary command element (classic or unified)."""
    requirement = el.approval.requirement
    envelope = el.envelope
    digest = el.approval_key.digest()
    bypass = False
    retry_unsandboxed = False
    if decision is not None and state.waiting is not None:
        retry_unsandboxed = state.waiting is ApprovalKind.SANDBOX_RETRY
        ended = await _apply_decision(state, ctx, decision)
        if ended is not None:
            return ended
        # An approved require_escalated / approved NeedsApproval run keeps the sandbox rules.
    elif isinstance(requirement, Forbidden):
        text = rejected_text(requirement.reason) if _is_exec(state) else requirement.reason
        return ElementResult(text, True, Termination.FORBIDDEN, success=False)
    elif isinstance(requirement, NeedsApproval):
        if not await ctx.thread.is_approved_for_session(digest):
            return await pause(
                state, ctx, emit, kind=ApprovalKind.EXEC_POLICY, argv=el.handler.argv,
                cwd=el.handler.cwd, environment_id=el.handler.environment_id,
                reason=requirement.reason or envelope.justification or "",
                amendment=requirement.proposed_execpolicy_amendment, digest=digest, element=el,
            )  # fmt: skip
    elif isinstance(requirement, Skip):
        bypass = requirement.bypass_sandbox
    sandbox = NO_SANDBOX if retry_unsandboxed else choose_sandbox(
        envelope, state.turn.permission_profile, bypass=bypass,
        extra_roots=ctx.extra_writable_roots,
    )  # fmt: skip
    try:
        spawner = _spawner(ctx, envelope.environment_id)
        if _is_exec(state):
            return await _run_unified(state, el, ctx, spawner, sandbox, emit)
        result = await _run_classic(state, el, ctx, spawner, sandbox, emit)
    except EnvironmentUnavailableError as exc:
        return _unavailable(state, exc)
    if result[1] and sandbox_retry_allowed(state.turn.handler.approval_policy):
        state.retry_result = result[0]
        return await pause(
            state, ctx, emit, kind=ApprovalKind.SANDBOX_RETRY, argv=el.handler.argv,
            cwd=el.handler.cwd, environment_id=el.handler.environment_id,
            reason=SANDBOX_RETRY_REASON, amendment=None, digest=digest, element=el,
        )  # fmt: skip
    return result[0]


def _listener(state: CallState, emit: Emit) -> OutputListener:
    index = state.index

    def on_output(chunk: OutputChunk, seq: int) -> None:
        emit(OutputEvent(index, chunk.stream, seq, chunk.data))

    return on_output


async def _run_classic(
    state: CallState,
    el: CommandElement,
    ctx: RuntimeContext,
    spawner: Spawner,
    sandbox: SandboxSpec,
    emit: Emit,
) -> tuple[ElementResult, bool]:
    index = state.index
    try:
        result = await run_classic(
            spawner=spawner, envelope=el.envelope, call_id=state.projected.call_id,
            sandbox=sandbox, owner=ctx.owner, listener=_listener(state, emit),
            interrupt=state.interrupt, env_policy=turn_env_policy(state, el),
            room=state.output_room,
            on_started=lambda s: emit(StartedEvent(
                index, spawner.environment_id, s.process_id, s.handle.pid, None, s.sandboxed)),
        )  # fmt: skip
    except SpawnFailure as exc:
        return ElementResult(spawn_failure_text(exc), True, Termination.SPAWN_FAILED), False
    if result.interrupted:
        return ElementResult("", True, Termination.CANCELLED, aborted=True), False
    rendered = classic_text(result, state.turn.truncation)
    if result.lost is not None:
        termination = Termination.ENVIRONMENT_LOST
    elif result.timed_out:
        termination = Termination.TIMED_OUT
    elif result.signal is not None:
        termination = Termination.SIGNALED
    else:
        termination = Termination.EXITED
    out = ElementResult(
        rendered.text, not result.success, termination, success=result.success,
        exit_code=result.exit_code, original_token_count=rendered.original_token_count,
        truncated=rendered.truncated,
    )  # fmt: skip
    return out, result.sandboxed and result.sandbox_denied()


async def _run_unified(
    state: CallState,
    el: CommandElement,
    ctx: RuntimeContext,
    spawner: Spawner,
    sandbox: SandboxSpec,
    emit: Emit,
) -> ElementResult:
    resp = await exec_command_start(
        manager=ctx.thread.sessions, spawner=spawner, envelope=el.envelope,
        call_id=state.projected.call_id, sandbox=sandbox, owner=ctx.owner,
        listener=_listener(state, emit), interrupt=state.interrupt, rng=ctx.rng,
        env_policy=turn_env_policy(state, el),
        on_started=lambda p: emit(StartedEvent(
            0, p.meta.environment_id, p.meta.backend_process_id, p.handle.pid,
            p.process_id, p.meta.sandboxed)),
    )  # fmt: skip
    if resp.spawn_failed:
        return ElementResult(resp.text, True, Termination.SPAWN_FAILED, success=False)
    if resp.interrupted:
        return ElementResult(
            "", True, Termination.CANCELLED, session_id=resp.session_id, aborted=True,
            warnings=resp.warnings,
        )  # fmt: skip
    # Unified responses are successful tool results even for non-zero exits (spec 05 §3.6).
    return ElementResult(
        resp.text, resp.exit_code not in (None, 0), resp.termination, success=True,
        exit_code=resp.exit_code, session_id=resp.session_id,
        original_token_count=resp.original_token_count, truncated=resp.truncated,
        warnings=resp.warnings,
    )  # fmt: skip


async def run_patch(
    state: CallState,
    ctx: RuntimeContext,
    decision: ApprovalDecision | None,
    emit: Emit,
    *,
    result: ApplyPatchAction | CorrectnessError,
    environment_id: str,
    roots: tuple[str, ...],
    argv: tuple[str, ...],
    element: PatchElement | None,
    unified_frame: bool,
) -> ElementResult:
    """The apply_patch runtime: verification error, empty patch, approval, apply."""
    if isinstance(result, CorrectnessError):
        return ElementResult(result.message, True, Termination.TOOL_ERROR, success=False)
    if result.is_empty:
        return ElementResult(EMPTY_PATCH_REJECTION, True, Termination.REJECTED, success=False)
    digest = patch_approval_digest(environment_id, result.patch, result.cwd)
    if decision is not None and state.waiting is not None:
        ended = await _apply_decision(state, ctx, decision)
        if ended is not None:
            return ended
    elif not await ctx.thread.is_approved_for_session(digest):
        gate = patch_gate(result, state.turn.permission_profile, state.turn.approval_policy, roots)
        if gate == "ask":
            return await pause(
                state, ctx, emit, kind=ApprovalKind.APPLY_PATCH, argv=argv, cwd=result.cwd,
                environment_id=environment_id, reason="", amendment=None, digest=digest,
                element=element,
            )  # fmt: skip
        if gate is not None and gate != "apply":
            return ElementResult(gate, True, Termination.REJECTED, success=False)
    try:
        fs = _spawner(ctx, environment_id).filesystem()
        # The patch runtime's filesystem calls block (a remote one waits on RPCs).
        applied = await asyncio.to_thread(finish_apply_patch, result, fs)
    except EnvironmentUnavailableError as exc:
        return _unavailable(state, exc)
    text = applied.text
    if unified_frame:
        text = render_unified_response(
            chunk_id="", wall_time_ms=0, exit_code=None, session_id=None,
            original_token_count=None, body=text,
        )  # fmt: skip
    code = applied.outcome.exit_code if applied.outcome is not None else None
    return ElementResult(
        text, not applied.success, Termination.EXITED, success=applied.success, exit_code=code
    )
