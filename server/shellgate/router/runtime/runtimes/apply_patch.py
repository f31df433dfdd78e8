"""The apply_patch runtime (spec 02 §6.4, 06 §10): patch safety, its approval key, applying it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shellgate.common.sandbox import SandboxSpec
from shellgate.router.apply_patch import (
    EMPTY_PATCH_REJECTION,
    PATCH_DECLINED,
    ApplyPatchAction,
    CorrectnessError,
    finish_apply_patch,
)
from shellgate.router.apply_patch.paths import is_within
from shellgate.router.apply_patch.protected import protected_areas, touches_protected
from shellgate.router.approval_identity import ApplyPatchApprovalKey
from shellgate.router.output.texts import render_unified_response
from shellgate.router.policy import ApprovalMode, ApprovalPolicy, SandboxProfile, engine_mode
from shellgate.router.projection import ApplyPatchToolCall, PatchElement
from shellgate.router.runtime.call.context import RuntimeRequest
from shellgate.router.runtime.call.events import ApprovalKind, Termination
from shellgate.router.runtime.call.orchestrator import (
    Ask,
    Gate,
    Proceed,
    Refuse,
    SandboxForbid,
    SandboxPreference,
    SessionApproval,
    writable_roots,
)
from shellgate.router.runtime.call.state import ApprovalSubject, Finished

__all__ = [
    "PATCH_OUTSIDE_PROJECT",
    "PATCH_READ_ONLY",
    "ApplyPatchRuntime",
    "AskUser",
    "AutoApprove",
    "PatchRequest",
    "Reject",
    "SafetyCheck",
    "assess_patch_safety",
    "element_patch",
    "tool_call_patch",
]

PATCH_READ_ONLY = (
    "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
)
PATCH_OUTSIDE_PROJECT = (
    "patch rejected: writing outside of the project; rejected by user approval settings"
)


@dataclass(frozen=True)
class AutoApprove:
    """Apply without asking."""


@dataclass(frozen=True)
class AskUser:
    """Ask the user first."""


@dataclass(frozen=True)
class Reject:
    """Do not apply; `reason` is the model-visible rejection text."""

    reason: str


# Codex's `SafetyCheck`: what the turn's settings say about one verified patch.
SafetyCheck = AutoApprove | AskUser | Reject


def assess_patch_safety(
    action: ApplyPatchAction,
    profile: SandboxProfile,
    policy: ApprovalPolicy,
    roots: Sequence[str],
    resolve: Callable[[str], str] = str,
    protected: Callable[[], Sequence[str]] = tuple,
) -> SafetyCheck:
    """Whether a verified non-empty patch applies, asks, or is rejected (spec 02 §6.4).

    `resolve` says where a write to a path really lands (the environment's symlinks): a
    path inside the roots by its text but outside them once resolved is treated like a
    `../` path (asked or rejected), better than Codex's text-only check. `protected` gives
    the places under the roots the sandbox keeps read-only (`apply_patch.protected`): a
    patch touching one is treated like a write outside the roots, as Codex treats its
    read-only subpaths, since a sandboxed command could not write there either.
    """
    # The exec policy's reading of the mode: on-failure rejects like never.
    mode = engine_mode(policy)
    if mode is ApprovalMode.UNLESS_TRUSTED:
        return AskUser()
    if profile is SandboxProfile.READ_ONLY:
        inside = False
        rejection = PATCH_READ_ONLY
    elif profile is SandboxProfile.WORKSPACE_WRITE:
        resolved_roots = [resolve(r) for r in roots]
        written = action.written_paths()
        inside = all(
            any(is_within(p, r) for r in roots)
            and any(is_within(resolve(p), r) for r in resolved_roots)
            for p in written
        ) and not touches_protected(written, protected(), resolve)
        rejection = PATCH_OUTSIDE_PROJECT
    else:
        return AutoApprove()
    if inside:
        return AutoApprove()
    return Reject(rejection) if mode is ApprovalMode.NEVER else AskUser()


@dataclass(frozen=True)
class PatchRequest:
    """A verified, non-empty patch to apply, and how its answer is framed."""

    action: ApplyPatchAction
    environment_id: str
    # Where a workspace-write turn lets the patch write.
    roots: tuple[str, ...]
    # The handler argv the patch was recognised in; () for the freeform tool.
    argv: tuple[str, ...]
    element: PatchElement | None
    # Inside exec_command the answer wears the unified response frame.
    unified_frame: bool


def _verified(result: ApplyPatchAction | CorrectnessError) -> ApplyPatchAction | Finished:
    # Answered before any approval, as Codex's handler does: nothing to approve or apply.
    match result:
        case CorrectnessError(message=message):
            return Finished(message, Termination.TOOL_ERROR, success=False)
        case ApplyPatchAction(is_empty=True):
            return Finished(EMPTY_PATCH_REJECTION, Termination.REJECTED, success=False)
        case _:
            return result


def element_patch(
    request: RuntimeRequest, element: PatchElement, *, unified_frame: bool
) -> ApplyPatchRuntime | Finished:
    """The runtime of a shell element recognised as apply_patch, or its early answer."""
    action = _verified(element.result)
    if isinstance(action, Finished):
        return action
    roots = writable_roots(element.envelope, request.ctx.extra_writable_roots)
    patch = PatchRequest(
        action, element.handler.environment_id, roots, element.handler.argv, element,
        unified_frame,
    )  # fmt: skip
    return ApplyPatchRuntime(request, patch)


def tool_call_patch(request: RuntimeRequest, call: ApplyPatchToolCall) -> ApplyPatchRuntime | Finished:
    """The runtime of the freeform apply_patch tool, or its early answer."""
    action = _verified(call.result)
    if isinstance(action, Finished):
        return action
    patch = PatchRequest(action, call.environment_id, (call.cwd, "/tmp"), (), None, False)
    return ApplyPatchRuntime(request, patch)


class ApplyPatchRuntime:
    """Applies a verified patch through the environment's filesystem (no process, no sandbox)."""

    def __init__(self, request: RuntimeRequest, patch: PatchRequest) -> None:
        self.request = request
        self.patch = patch
        # Set when the patch applies without asking because it stays in the writable roots:
        # it is then applied through a confined view, so no symlink (even one swapped in
        # after the check) can carry a write outside them. A patch the user approved is not.
        self._confined = False

    async def approval(self, approved_for_session: SessionApproval) -> Gate:
        """The session cache first, then the patch's safety check."""
        # A patch approved for the session applies even where this turn's settings would
        # reject it: the cache is read before the safety check.
        if await approved_for_session():
            return Proceed()
        turn = self.request.turn
        fs = self.request.spawner(self.patch.environment_id).filesystem()
        roots = self.patch.roots
        check = await asyncio.to_thread(
            assess_patch_safety, self.patch.action, turn.permission_profile,
            turn.approval_policy, roots, fs.resolve, lambda: protected_areas(roots, fs),
        )  # fmt: skip
        match check:
            case AutoApprove():
                self._confined = turn.permission_profile is SandboxProfile.WORKSPACE_WRITE
                return Proceed()
            case AskUser():
                return Ask(ApprovalKind.APPLY_PATCH, "")
            case Reject(reason=reason):
                return Refuse(Finished(reason, Termination.REJECTED, success=False))

    def approval_key(self) -> ApplyPatchApprovalKey:
        """`{kind: apply_patch, environment_id, patch, cwd}`."""
        action = self.patch.action
        return ApplyPatchApprovalKey(self.patch.environment_id, action.patch, action.cwd)

    def approval_subject(self) -> ApprovalSubject:
        """The handler argv (if any), the patch's cwd and environment."""
        patch = self.patch
        return ApprovalSubject(
            patch.argv, patch.action.cwd, patch.environment_id, patch.element, patch.action
        )

    def rejected_by_user(self) -> Finished:
        """`patch rejected by user`."""
        return Finished(PATCH_DECLINED, Termination.REJECTED, success=False)

    def sandbox_preference(self) -> SandboxPreference:
        """Never sandboxed: the router writes through the filesystem API itself."""
        return SandboxForbid()

    async def run(self, sandbox: SandboxSpec) -> Finished:
        """Apply the patch; the answer is the classic block (in exec_command's frame)."""
        fs = self.request.spawner(self.patch.environment_id).filesystem()
        if self._confined:
            fs = fs.confined(self.patch.roots)
        # The patch runtime's filesystem calls block (a remote one waits on RPCs).
        applied = await asyncio.to_thread(finish_apply_patch, self.patch.action, fs)
        text = applied.text
        if self.patch.unified_frame:
            text = render_unified_response(
                chunk_id="", wall_time_ms=0, exit_code=None, session_id=None,
                original_token_count=None, body=text,
            )  # fmt: skip
        code = applied.outcome.exit_code if applied.outcome is not None else None
        return Finished(text, Termination.EXITED, success=applied.success, exit_code=code)
