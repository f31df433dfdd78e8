"""Builds the router's operator route (docs/approvals.md): board, waiting calls, desk, webhook."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shellgate.common.auth import OPERATOR_ROLE, Authenticator
from shellgate.router.runtime.approvals.board import InMemoryBoard, OperatorBoard
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.operator_wait import (
    BoardDesk,
    Decided,
    OperatorApprovals,
)
from shellgate.router.runtime.approvals.settings import OperatorSettings
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    ApprovalRoute,
    BoardStatus,
    DecisionSource,
)
from shellgate.router.runtime.audit import AuditSink
from shellgate.router.service.approval_webhook import ApprovalWebhook
from shellgate.router.service.config import RouterConfig
from shellgate.router.service.metrics import Metrics
from shellgate.router.service.redaction import Redactor

if TYPE_CHECKING:
    from shellgate.router.runtime.store.record_seal import RecordSeal
    from shellgate.router.runtime.store.redis_bus import RedisBus
    from shellgate.router.runtime.store.redis_link import RedisLink

__all__ = ["OperatorRoute", "build_operator_route"]

# How the webhook words the end of a wait that no operator decided.
_UNDECIDED = {
    DecisionSource.DEADLINE: BoardStatus.EXPIRED,
    DecisionSource.INTERRUPT: BoardStatus.WITHDRAWN,
}


@dataclass
class OperatorRoute:
    """What the app holds of the operator route: the runtime side, the desk, the webhook."""

    approvals: OperatorApprovals
    desk: BoardDesk
    webhook: ApprovalWebhook | None

    async def aclose(self) -> None:
        """Stop webhook deliveries still under way."""
        if self.webhook is not None:
            await self.webhook.aclose()


def build_operator_route(
    config: RouterConfig,
    *,
    instance_id: str,
    auth: Authenticator,
    metrics: Metrics,
    audit: AuditSink | None,
    redactor: Redactor | None,
    redis: tuple[RedisLink, str, RedisBus, RecordSeal] | None,
) -> OperatorRoute:
    """The operator route of one router; `redis` = (the store's link, key prefix, bus, the
    records' seal) in scaled mode."""
    approvals_config = config.approvals
    board: OperatorBoard
    if redis is not None:
        from shellgate.router.runtime.store.redis_board import RedisBoard

        link, prefix, bus, seal = redis
        board = RedisBoard(link, prefix=prefix, bus=bus, seal=seal)
    else:
        board = InMemoryBoard()
    # The config's route words (TOML, checked by its schema) become the typed routes here.
    settings = OperatorSettings(
        default_route=ApprovalRoute(approvals_config.default_route),
        environment_routes=tuple(
            (env.environment_id, ApprovalRoute(env.approval_route))
            for env in config.environments
            if env.approval_route
        ),
        deadline_ms=approvals_config.operator_deadline_ms,
        keepalive_ms=approvals_config.keepalive_ms,
        poll_ms=approvals_config.poll_ms,
        fallback=(
            ApprovalDecision.ABORT
            if approvals_config.deadline_fallback == "abort"
            else ApprovalDecision.DENIED
        ),
    )
    webhook = None
    if approvals_config.webhook.url:
        webhook = ApprovalWebhook(
            approvals_config.webhook, router_id=instance_id, on_attempt=metrics.webhook_delivery
        )
    on_pending = webhook.notify if webhook is not None else _no_webhook

    def on_settled(view: PendingView, decided: Decided | None) -> None:
        if webhook is None:
            return
        if decided is None:  # the caller cancelled or disconnected
            webhook.settled(
                view, BoardStatus.WITHDRAWN, ApprovalDecision.ABORT, DecisionSource.CALLER, ""
            )
            return
        status = _UNDECIDED.get(decided.source, BoardStatus.DECIDED)
        webhook.settled(view, status, decided.decision, decided.source, decided.who)

    # `json_text`: the escaped forms too, for a policy reason quotes the command Rust-style,
    # which escapes a value's quotes as JSON does.
    approvals = OperatorApprovals(
        settings, board, instance_id=instance_id,
        redact=redactor.json_text if redactor is not None else None, audit=audit,
        on_pending=on_pending, on_decided=metrics.operator_decided, on_settled=on_settled,
    )  # fmt: skip

    def is_operator(subject: str) -> bool:
        return OPERATOR_ROLE in auth.roles(subject)

    return OperatorRoute(approvals, BoardDesk(board, is_operator), webhook)


def _no_webhook(_view: PendingView) -> None:
    return None
