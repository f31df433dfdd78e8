"""The orchestrator: approval, sandbox selection and retry for any tool runtime (spec 06 §3, §7).

Named after Codex's `tools/orchestrator.rs` ("central place for approvals + sandbox
selection + retry semantics"): one sequence, written once, drives every `ToolRuntime`
(shell_command, exec_command, apply_patch in `runtimes/`). Each runtime stays small: it
says what its policy requires, what its approval key is, and how to run one attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shellgate.common.errors import EnvironmentNotFoundError
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.common.tracing import span
from shellgate.router.envelope import ExecutionEnvelope
from shellgate.router.policy import ApprovalMode, ApprovalPolicy, SandboxProfile
from shellgate.router.policy.model import PrefixRuleMatch
from shellgate.router.runtime.approvals.vocabulary import AuditDecision, DecisionSource
from shellgate.router.runtime.audit import AuditCall, AuditTrail, environment_host, sandbox_name
from shellgate.router.runtime.call.context import RuntimeRequest
from shellgate.router.runtime.call.events import ApprovalKind, Termination
from shellgate.router.runtime.call.state import (
    Aborted,
    Answer,
    ApprovalSubject,
    Approved,
    Denied,
    ElementOutcome,
    Finished,
    Parked,
)
from shellgate.router.runtime.environments.spawn import NO_SANDBOX, EnvironmentUnavailableError

__all__ = [
    "SANDBOX_RETRY_REASON",
    "AnyApprovalKey",
    "Ask",
    "Gate",
    "Proceed",
    "Refuse",
    "SandboxAuto",
    "SandboxDenied",
    "SandboxForbid",
    "SandboxPreference",
    "SessionApproval",
    "ToolRuntime",
    "choose_sandbox",
    "orchestrate",
    "sandbox_retry_allowed",
    "writable_roots",
]

SANDBOX_RETRY_REASON = (
    "command was blocked by the sandbox; approve to run it again without the sandbox"
)


# --- what a runtime tells the orchestrator ---------------------------------------------------


@dataclass(frozen=True)
class Proceed:
    """Run without asking; `bypass_sandbox` when the policy allowed it outside the sandbox."""

    bypass_sandbox: bool = False


@dataclass(frozen=True)
class Ask:
    """Park the element until the user decides (the session cache was already consulted)."""

    kind: ApprovalKind
    reason: str
    amendment: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Refuse:
    """Do not run: the model gets this answer (forbidden, or rejected by the settings)."""

    answer: Finished


Gate = Proceed | Ask | Refuse

# Whether the element's approval key was approved for the thread's session (a shared-store
# read; a runtime asks only when its order of checks needs the answer).
SessionApproval = Callable[[], Awaitable[bool]]


@dataclass(frozen=True)
class SandboxAuto:
    """Run under the turn's sandbox around this envelope, unless bypassed or escalated."""

    envelope: ExecutionEnvelope


@dataclass(frozen=True)
class SandboxForbid:
    """Never sandboxed: nothing is spawned (apply_patch writes through the filesystem API)."""


SandboxPreference = SandboxAuto | SandboxForbid


@dataclass(frozen=True)
class SandboxDenied:
    """An attempt the sandbox blocked (spec 05 §1.4 heuristic): a retry may be offered."""

    result: Finished


class AnyApprovalKey(Protocol):
    """What "approved for session" remembers of an element, by its digest (spec 06 §8)."""

    def digest(self) -> str:
        """Lowercase hex SHA-256 of the key's canonical JSON."""
        ...


class ToolRuntime(Protocol):
    """One tool's runtime: Codex's `Approvable` + `Sandboxable` + `ToolRuntime`."""

    async def approval(self, approved_for_session: SessionApproval) -> Gate:
        """What the turn's policy requires before the first attempt."""
        ...

    def approval_key(self) -> AnyApprovalKey:
        """The key an approval is remembered under."""
        ...

    def approval_subject(self) -> ApprovalSubject:
        """What the user is shown when asked."""
        ...

    def rejected_by_user(self) -> Finished:
        """The answer when the user denies the element."""
        ...

    def sandbox_preference(self) -> SandboxPreference:
        """Whether and around what the attempt may be sandboxed."""
        ...

    async def run(self, sandbox: SandboxSpec) -> Finished | Aborted | SandboxDenied:
        """One attempt under `sandbox`; EnvironmentUnavailableError when nothing started."""
        ...


# --- sandbox selection and retry rules (pure) ------------------------------------------------


def writable_roots(envelope: ExecutionEnvelope, extra_roots: Sequence[str] = ()) -> tuple[str, ...]:
    """Workspace-write roots: the environment root, /tmp, $TMPDIR and configured extras."""
    roots = [envelope.sandbox_cwd, "/tmp"]
    tmpdir = envelope.env_map.get("TMPDIR")
    if tmpdir:
        roots.append(tmpdir)
    roots.extend(extra_roots)
    return tuple(dict.fromkeys(roots))


def choose_sandbox(
    envelope: ExecutionEnvelope,
    profile: SandboxProfile,
    *,
    bypass: bool,
    extra_roots: Sequence[str] = (),
) -> SandboxSpec:
    """The first attempt's sandbox (spec 04 §6, 06 §7): none when bypassed or escalated.

    The network is the envelope's: workspace-write's flag; read-only never has it.
    """
    if bypass or envelope.effective_permissions.sandbox_permissions == "require_escalated":
        return NO_SANDBOX
    if profile is SandboxProfile.READ_ONLY:
        return SandboxSpec(SandboxMode.READ_ONLY, (), network_access=False)
    if profile is SandboxProfile.WORKSPACE_WRITE:
        return SandboxSpec(
            SandboxMode.WORKSPACE_WRITE, writable_roots(envelope, extra_roots),
            envelope.network_access, egress_narrowing=envelope.egress,
        )  # fmt: skip
    # danger-full-access, and an external sandbox that already confines us.
    return NO_SANDBOX


def sandbox_retry_allowed(policy: ApprovalPolicy) -> bool:
    """Whether a sandbox denial may be offered an unsandboxed retry (on-request / on-failure).

    Reads the policy as given: unlike the exec policy, this offer tells on-failure from never.
    """
    if policy.mode in (ApprovalMode.ON_REQUEST, ApprovalMode.ON_FAILURE):
        return True
    return policy.granular is not None and policy.granular.sandbox_approval


# --- the sequence ----------------------------------------------------------------------------


async def orchestrate(
    runtime: ToolRuntime, request: RuntimeRequest, answer: Answer | None
) -> ElementOutcome:
    """Drive one element: approval, first attempt, sandbox-denial retry.

    `answer` is the user's decision when the call resumes at this element; later elements
    meet their own gates. Every decision and every end is told to the audit trail.
    """
    thread = request.ctx.thread
    trail = _trail(runtime, request)
    bypass = unsandboxed = cached = False

    async def approved_for_session() -> bool:
        nonlocal cached
        cached = await thread.is_approved_for_session(runtime.approval_key().digest())
        return cached

    # 1) Approval: a resumed element applies the user's answer; a new one meets its gate.
    match answer:
        case None:
            with span("shellgate.policy"):
                gate = await runtime.approval(approved_for_session)
            match gate:
                case Refuse(answer=refused):
                    forbidden = refused.termination is Termination.FORBIDDEN
                    decided = AuditDecision.FORBIDDEN if forbidden else AuditDecision.REJECTED
                    trail.decide(decided, DecisionSource.POLICY)
                    trail.ended(refused)
                    return refused
                case Ask(kind=kind, reason=reason, amendment=amendment):
                    trail.decide(
                        AuditDecision.ASK, DecisionSource.POLICY, reason, amendment,
                        approval_kind=kind.value,
                    )  # fmt: skip
                    return await _park(runtime, request, trail, kind, reason, amendment)
                case Proceed(bypass_sandbox=bypass):
                    source = DecisionSource.CACHED_GRANT if cached else _allow_source(runtime)
                    trail.decide(AuditDecision.ALLOW, source)
        case Finished() | Aborted():
            # Abort, or a denied sandbox retry: the stored answer stands.
            decision = AuditDecision.ABORT if isinstance(answer, Aborted) else AuditDecision.DENIED
            trail.decide(decision, request.approval_source, who=request.approver)
            trail.ended(answer)
            return answer
        case Denied():
            trail.decide(AuditDecision.DENIED, request.approval_source, who=request.approver)
            rejected = runtime.rejected_by_user()
            trail.ended(rejected)
            return rejected
        case Approved(unsandboxed=unsandboxed, remember=remember, amendment=amendment):
            trail.decide(
                AuditDecision.APPROVED, request.approval_source, amendment=amendment,
                for_session=remember is not None, who=request.approver,
            )  # fmt: skip
            trail.notes.sandbox_retry = unsandboxed
            if remember is not None:
                await thread.approve_for_session(remember)
            store = request.ctx.policy_store
            if amendment and store is not None:
                # Blocking file lock + atomic rename: keep it off the event loop.
                await asyncio.to_thread(store.append_prefix_rule, amendment)
                if store.share is not None:
                    # Scaled mode: every replica applies it (service/shared_rules).
                    await store.share(amendment)

    # 2) First attempt under the selected sandbox.
    match runtime.sandbox_preference():
        case SandboxAuto(envelope=envelope) if not unsandboxed:
            sandbox = choose_sandbox(
                envelope, request.turn.permission_profile, bypass=bypass,
                extra_roots=request.ctx.extra_writable_roots,
            )  # fmt: skip
        case _:
            sandbox = NO_SANDBOX
    trail.notes.sandbox = sandbox_name(sandbox)
    try:
        with span("shellgate.run", {"sandbox": trail.notes.sandbox, "tool": request.tool}):
            result = await runtime.run(sandbox)
    except EnvironmentUnavailableError as exc:
        unavailable = request.unavailable(exc)
        trail.ended(unavailable)
        return unavailable

    # 3) The sandbox blocked it: offer the unsandboxed retry where the policy allows one
    # (spec 06 §3.5); otherwise the sandboxed run's output is the answer.
    match result:
        case SandboxDenied(result=denied):
            trail.ended(denied, sandbox_denied=True)
            if sandbox_retry_allowed(request.turn.approval_policy):
                kind = ApprovalKind.SANDBOX_RETRY
                trail.decide(
                    AuditDecision.ASK, DecisionSource.POLICY, SANDBOX_RETRY_REASON,
                    approval_kind=kind.value,
                )  # fmt: skip
                return await _park(
                    runtime, request, trail, kind, SANDBOX_RETRY_REASON, None, denied,
                )  # fmt: skip
            return denied
        case _:
            trail.ended(result)
            return result


def _trail(runtime: ToolRuntime, request: RuntimeRequest) -> AuditTrail:
    """The element's audit trail (a silent one when no audit log is configured)."""
    sink = request.ctx.audit
    call = AuditCall(
        request.ctx.thread.thread_id, request.call_id, request.ctx.caller_subject,
        request.tool, request.element_index,
    )  # fmt: skip
    if sink is None:
        return AuditTrail(None, call, ApprovalSubject((), "", "", None), "")
    subject = runtime.approval_subject()
    try:
        host = environment_host(request.ctx.environments.get(subject.environment_id))
    except EnvironmentNotFoundError:
        host = ""
    return AuditTrail(sink, call, subject, runtime.approval_key().digest(), host)


def _allow_source(runtime: ToolRuntime) -> DecisionSource:
    """`rule` when a prefix rule allowed the command, else `policy` (the turn's settings)."""
    subject = runtime.approval_subject()
    element = subject.element
    approval = getattr(element, "approval", None)
    if approval is not None and any(
        isinstance(m, PrefixRuleMatch) for m in approval.segment_matches
    ):
        return DecisionSource.RULE
    return DecisionSource.POLICY


async def _park(
    runtime: ToolRuntime,
    request: RuntimeRequest,
    trail: AuditTrail,
    kind: ApprovalKind,
    reason: str,
    amendment: tuple[str, ...] | None,
    retry_result: Finished | None = None,
) -> Parked | Finished:
    """Park the element for its approval, or end it when its environment cannot be asked."""
    try:
        identity = await _cwd_identity(runtime, request)
    except EnvironmentUnavailableError as exc:
        # Fail closed: an approval whose directory cannot be pinned is not asked for.
        unavailable = request.unavailable(exc)
        trail.ended(unavailable)
        return unavailable
    return Parked(
        kind=kind,
        element_index=request.element_index,
        reason=reason,
        amendment=amendment,
        key=runtime.approval_key().digest(),
        subject=runtime.approval_subject(),
        retry_result=retry_result,
        cwd_identity=identity,
    )


async def _cwd_identity(runtime: ToolRuntime, request: RuntimeRequest) -> tuple[int, int] | None:
    """The directory a command is approved in, as it is now (common/process/cwd_pin).

    Taken when the approval is asked for, on the environment's own host (a daemon answers
    with its Stat); the spawn starts in that directory or fails. None where nothing can be
    pinned: apply_patch (it spawns nothing), a daemon that reports no identity (older, or an
    SSH backend), a remote command without a cwd (the daemon's own), an unknown environment
    (the spawn refuses it anyway).
    """
    match runtime.sandbox_preference():
        case SandboxAuto(envelope=envelope):
            try:
                spawner = request.spawner(envelope.environment_id)
            except EnvironmentUnavailableError:
                return None
            if spawner.remote and not envelope.cwd:
                return None
            return await spawner.identify_cwd(envelope.cwd)
        case _:
            return None
