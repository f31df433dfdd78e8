"""`[approvals]`: who decides pending approvals, deadlines, operators, the webhook (docs/approvals.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from shellgate.common.config_schema import ConfigError, model_of

__all__ = [
    "APPROVALS_TABLE",
    "MAX_OPERATOR_DEADLINE_MS",
    "ApprovalsConfig",
    "RouteName",
    "WebhookConfig",
]

RouteName = Literal["caller", "operator"]
# An operator-routed call holds an Execute slot and a stream while it waits: bounded.
MAX_OPERATOR_DEADLINE_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class WebhookConfig:
    """`[approvals.webhook]`: POST each new pending operator approval, HMAC-signed."""

    # https://…; http:// only to a loopback host unless allow_insecure_http.
    url: str = ""
    # A file holding the HMAC-SHA256 key (first line); required with a url.
    secret_file: str = ""
    timeout_ms: int = 5_000
    # Further attempts after a failed one (backoff doubling from retry_backoff_ms).
    max_retries: int = 3
    retry_backoff_ms: int = 500
    allow_insecure_http: bool = False


@dataclass(frozen=True)
class ApprovalsConfig:
    """`[approvals]`: the router's default route and how operator-routed calls wait."""

    # caller: today's behaviour (approval_required ends the stream); operator: an
    # operator decides through ApprovalService while the caller's stream stays open.
    default_route: str = "caller"
    # How long an operator-routed call waits for a decision (max 24 h).
    operator_deadline_ms: int = 10 * 60 * 1000
    # What the caller gets when the deadline passes: Codex's rejection text, or the abort.
    deadline_fallback: str = "deny"
    # How often the open stream gets an `approval_waiting` keepalive.
    keepalive_ms: int = 15_000
    # How often a waiting call re-reads its decision from the store (the replica bus
    # notice may be lost).
    poll_ms: int = 1_000
    # mTLS identities (certificate common names) that hold the operator role.
    operator_subjects: tuple[str, ...] = ()
    webhook: WebhookConfig = field(default_factory=WebhookConfig)

    def validate(self) -> None:
        """Refuse bounds the waiting call cannot honour."""
        if not 1 <= self.operator_deadline_ms <= MAX_OPERATOR_DEADLINE_MS:
            raise ConfigError(
                "approvals.operator_deadline_ms",
                f"must be between 1 and {MAX_OPERATOR_DEADLINE_MS}",
                got=self.operator_deadline_ms,
            )
        for key in ("keepalive_ms", "poll_ms"):
            if getattr(self, key) < 10:
                raise ConfigError(f"approvals.{key}", "must be >= 10", got=getattr(self, key))
        hook = self.webhook
        if hook.url and not hook.secret_file:
            raise ConfigError("approvals.webhook.secret_file", "required with a webhook url")
        if hook.url and hook.timeout_ms < 1:
            raise ConfigError("approvals.webhook.timeout_ms", "must be >= 1", got=hook.timeout_ms)


APPROVALS_TABLE = model_of(
    ApprovalsConfig,
    types={
        "default_route": RouteName,
        "deadline_fallback": Literal["deny", "abort"],
        "webhook": model_of(WebhookConfig, types={"url": str}),
        "operator_deadline_ms": int,
        "keepalive_ms": int,
        "poll_ms": int,
    },
)
