"""What both shell runtimes share for an ordinary command element: its gate, key and texts."""

from __future__ import annotations

from shellgate.router.approval_identity import SessionApprovalKey
from shellgate.router.policy import Forbidden, NeedsApproval, Skip
from shellgate.router.projection import CommandElement
from shellgate.router.runtime.call.context import RuntimeRequest, rejected_text
from shellgate.router.runtime.call.events import ApprovalKind, Termination
from shellgate.router.runtime.call.orchestrator import (
    Ask,
    Gate,
    Proceed,
    Refuse,
    SandboxAuto,
    SandboxPreference,
    SessionApproval,
)
from shellgate.router.runtime.call.state import ApprovalSubject, Finished

__all__ = ["REJECTED_BY_USER", "CommandRuntime"]

REJECTED_BY_USER = "exec command rejected by user"


class CommandRuntime:
    """Approval and sandboxing of a handler command (spec 04 §5, 06 §3); subclasses run it."""

    def __init__(self, request: RuntimeRequest, element: CommandElement) -> None:
        self.request = request
        self.element = element

    async def approval(self, approved_for_session: SessionApproval) -> Gate:
        """The exec policy's requirement; the session cache is read only when it asks."""
        match self.element.approval.requirement:
            case Forbidden(reason=reason):
                refused = Finished(
                    self.request.refusal(reason), Termination.FORBIDDEN, success=False
                )
                return Refuse(refused)
            case NeedsApproval(reason=reason, proposed_execpolicy_amendment=amendment):
                if await approved_for_session():
                    # Approved earlier: the run keeps the sandbox rules.
                    return Proceed()
                reason = reason or self.element.envelope.justification or ""
                if self.element.resolution_env:
                    # A prefix rule cannot say which PATH it was approved under: appending
                    # `touch` approved while PATH put the workspace's own `touch` first
                    # would let any later `touch` run unasked. Once / for session remain
                    # (the session key is bound to the overrides).
                    amendment = None
                return Ask(ApprovalKind.EXEC_POLICY, reason, amendment)
            case Skip(bypass_sandbox=bypass):
                return Proceed(bypass)

    def approval_key(self) -> SessionApprovalKey:
        """Projection C's key of the command (spec 03 §C.2), bound to the resolution env.

        Its digest is Codex's when the turn changed no PATH/LD_*/… variable, and differs
        otherwise: approved-for-session never carries over to another PATH (docs/approvals.md).
        """
        return self.element.session_key

    def approval_subject(self) -> ApprovalSubject:
        """The raw handler argv, its cwd and environment."""
        handler = self.element.handler
        return ApprovalSubject(handler.argv, handler.cwd, handler.environment_id, self.element)

    def rejected_by_user(self) -> Finished:
        """`exec command rejected by user`, or exec_command's `Rejected(…)` form (06 §3.4)."""
        text = rejected_text("rejected by user") if self.request.exec_frame else REJECTED_BY_USER
        return Finished(text, Termination.REJECTED, success=False)

    def sandbox_preference(self) -> SandboxPreference:
        """The turn's sandbox around the command's envelope."""
        return SandboxAuto(self.element.envelope)
