"""ApprovalService: protobuf ↔ the operator desk, nothing else (errors mapped at the boundary)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shellgate.common.boundary import unary
from shellgate.common.errors import InvalidArgumentError, NotOperatorError
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.service.wire.events import DECISIONS
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc

if TYPE_CHECKING:
    from shellgate.router.service.app import RouterApp

__all__ = ["SERVICE_NAME", "ApprovalServicer", "pending_pb"]

SERVICE_NAME = approvals_pb2.DESCRIPTOR.services_by_name["ApprovalService"].full_name
_DECISIONS_PB = {v: k for k, v in DECISIONS.items()}


def pending_pb(view: PendingView) -> approvals_pb2.PendingApproval:
    """One PendingView on the wire, field by field (built and redacted by `build_view`)."""
    return approvals_pb2.PendingApproval(
        approval_id=view.approval_id, thread_id=view.thread_id, call_id=view.call_id,
        caller_subject=view.caller_subject, tool=view.tool,
        environment_id=view.environment_id, cwd=view.cwd, command=view.command,
        summary=view.summary, kind=view.kind, reason=view.reason,
        segments=list(view.segments), matched_rules=list(view.matched_rules),
        proposed_amendment=list(view.proposed_amendment),
        available_decisions=[_DECISIONS_PB[d] for d in view.available_decisions],
        created_unix_ms=view.created_at_ms, deadline_unix_ms=view.deadline_ms,
        hidden_characters=list(view.hidden_characters), patch_files=list(view.patch_files),
        patch_diff=view.patch_diff, env_overrides=list(view.env_overrides),
    )  # fmt: skip


class ApprovalServicer(approvals_pb2_grpc.ApprovalServiceServicer):  # type: ignore[misc]
    """The gRPC face of the router's operator desk; every RPC but AnswerApproval (the
    caller's own live approvals) needs the operator role."""

    def __init__(self, app: RouterApp) -> None:
        self._app = app
        self.on_rpc_error = app.metrics.rpc_rejected

    def _operator(self, context: Any) -> str:
        # The same authentication as ToolRouterService (tokens, mTLS identities).
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        identity = {k: list(v) for k, v in (context.auth_context() or {}).items()}
        subject = self._app.caller(metadata, identity).subject
        if not self._app.operator_desk.is_operator(subject):
            raise NotOperatorError(f"{subject!r} does not hold the operator role")
        return subject

    @unary
    async def ListPendingApprovals(
        self, request: approvals_pb2.ListPendingApprovalsRequest, context: Any
    ) -> approvals_pb2.ListPendingApprovalsResponse:
        """Every operator-routed approval still waiting, on any replica."""
        self._operator(context)
        views = await self._app.operator_desk.list_pending()
        return approvals_pb2.ListPendingApprovalsResponse(approvals=[pending_pb(v) for v in views])

    @unary
    async def DecideApproval(
        self, request: approvals_pb2.DecideApprovalRequest, context: Any
    ) -> approvals_pb2.DecideApprovalResponse:
        """Settle one approval as the calling operator."""
        subject = self._operator(context)
        decision = DECISIONS.get(request.decision)
        if decision is None:
            raise InvalidArgumentError("decision: unspecified")
        if not request.approval_id:
            raise InvalidArgumentError("approval_id: required")
        await self._app.operator_desk.decide(request.approval_id, decision, subject)
        return approvals_pb2.DecideApprovalResponse()

    @unary
    async def AnswerApproval(
        self, request: approvals_pb2.AnswerApprovalRequest, context: Any
    ) -> approvals_pb2.AnswerApprovalResponse:
        """Settle a live caller approval as its own caller (no operator role needed)."""
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        identity = {k: list(v) for k, v in (context.auth_context() or {}).items()}
        subject = self._app.caller(metadata, identity).subject
        decision = DECISIONS.get(request.decision)
        if decision is None:
            raise InvalidArgumentError("decision: unspecified")
        if not request.approval_id:
            raise InvalidArgumentError("approval_id: required")
        await self._app.operator_desk.answer(request.approval_id, decision, subject)
        return approvals_pb2.AnswerApprovalResponse()
