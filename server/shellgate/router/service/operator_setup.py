"""Builds the router's operator route (docs/approvals.md): board, waiting calls, desk, webhook."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shellgate.common.auth import OPERATOR_ROLE, Authenticator
from shellgate.router.runtime.approvals.board import InMemoryBoard, OperatorBoard
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.operator_wait import (
    BoardDesk,
    Decided,
    OperatorApprovals,
    OperatorSettings,
)
from shellgate.router.runtime.audit import AuditSink
from shellgate.router.service.approval_webhook import ApprovalWebhook
from shellgate.router.service.config import RouterConfig
from shellgate.router.service.metrics import Metrics
from shellgate.router.service.redaction import Redactor

if TYPE_CHECKING:
    from shellgate.router.runtime.store.monitor import StoreMonitor
    from shellgate.router.runtime.store.record_seal import RecordSeal
    from shellgate.router.runtime.store.redis_bus import RedisBus

__all__ = ["OperatorRoute", "build_operator_route"]


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
    redis: tuple[Any, str, RedisBus, StoreMonitor, RecordSeal] | None,
) -> OperatorRoute:
    """The operator route of one router; `redis` = (client, key prefix, bus, the store's
    monitor, the records' seal) in scaled mode."""
    approvals_config = config.approvals
    board: OperatorBoard
    if redis is not None:
        from shellgate.router.runtime.store.redis_board import RedisBoard

        client, prefix, bus, monitor, seal = redis
        board = RedisBoard(client, prefix=prefix, bus=bus, seal=seal, monitor=monitor)
    else:
        board = InMemoryBoard()
    settings = OperatorSettings(
        default_route=approvals_config.default_route,
        environment_routes=tuple(
            (env.environment_id, env.approval_route)
            for env in config.environments
            if env.approval_route
        ),
        deadline_ms=approvals_config.operator_deadline_ms,
        keepalive_ms=approvals_config.keepalive_ms,
        poll_ms=approvals_config.poll_ms,
        fallback=approvals_config.deadline_fallback,
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
            webhook.settled(view, "withdrawn", "abort", "caller", "")
            return
        status = {"deadline": "expired", "interrupt": "withdrawn"}.get(decided.source, "decided")
        webhook.settled(view, status, decided.decision.value, decided.source, decided.who)

    approvals = OperatorApprovals(
        settings, board, instance_id=instance_id,
        redact=redactor.text if redactor is not None else _same,
        audit=audit, on_pending=on_pending, on_decided=metrics.operator_decided,
        on_settled=on_settled,
    )  # fmt: skip

    def is_operator(subject: str) -> bool:
        return OPERATOR_ROLE in auth.roles(subject)

    return OperatorRoute(approvals, BoardDesk(board, is_operator), webhook)


def _same(text: str) -> str:
    return text


def _no_webhook(_view: PendingView) -> None:
    return None
