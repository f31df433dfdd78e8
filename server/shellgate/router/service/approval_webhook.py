"""The approval webhook: POST each operator-routed approval when it is posted and when it is
settled, HMAC-signed (docs/approvals.md).

The router's core dependencies hold no HTTP client (httpx only comes with the optional
`mcp` extra), and one small POST per approval does not justify a new one: the request is
stdlib `urllib.request` run in a worker thread. Delivery never delays or fails the call:
it runs in the owner's TaskSet, retries a bounded number of times with doubling backoff,
and logs failures rate-limited, never the secret or the body. Redirects are not followed
and proxy variables of the environment are ignored: the signed body (it carries the command)
goes to the configured URL and nowhere else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from shellgate.common.backoff import Backoff
from shellgate.common.config_schema import ConfigError
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.common.tasks import TaskSet
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    BoardStatus,
    DecisionSource,
)
from shellgate.router.service.approvals_config import WebhookConfig

__all__ = ["ApprovalWebhook", "check_webhook_url", "signature"]

_log = logging.getLogger(__name__)
# At most one failure line per this many seconds (the rest are counted in the metric).
_LOG_EVERY_S = 60.0
EVENT = "approval_pending"
SETTLED_EVENT = "approval_settled"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


# No ProxyHandler from the environment, no redirects (see the module docstring).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def check_webhook_url(config: WebhookConfig) -> None:
    """Refuse a url that is not https (http only to loopback or with allow_insecure_http)."""
    parts = urlsplit(config.url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname:
        if config.allow_insecure_http or is_loopback_host(parts.hostname):
            return
        raise ConfigError(
            "approvals.webhook.url",
            "http:// only to a loopback host; use https:// or set allow_insecure_http = true",
            got=config.url,
        )
    raise ConfigError("approvals.webhook.url", "must be an http(s):// URL", got=config.url)


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of timestamp + "." + body>` (X-Shellgate-Signature)."""
    digest = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class ApprovalWebhook:
    """Posts `approval_pending` notifications in the background (see the module docstring)."""

    def __init__(
        self,
        config: WebhookConfig,
        *,
        router_id: str,
        on_attempt: Callable[[str], None] = lambda _outcome: None,
    ) -> None:
        check_webhook_url(config)
        try:
            lines = Path(config.secret_file).read_text().splitlines()
        except OSError as exc:
            raise ConfigError(
                "approvals.webhook.secret_file", f"cannot read: {exc.strerror or exc}",
                got=config.secret_file,
            ) from exc  # fmt: skip
        if not lines or not lines[0].strip():
            raise ConfigError("approvals.webhook.secret_file", "the file is empty")
        self._secret = lines[0].strip().encode()
        self._config = config
        self._router_id = router_id
        self._on_attempt = on_attempt
        self._tasks = TaskSet(_log)
        self._logged_at = 0.0
        self._suppressed = 0

    def notify(self, view: PendingView) -> None:
        """Queue the POST of one new pending approval (returns at once); the body carries
        the view as built (and redacted) by `runtime/approvals/view.py`, field by field."""
        payload: dict[str, object] = {"event": EVENT, "approval": dataclasses.asdict(view)}
        self._spawn(EVENT, view.approval_id, payload)

    def settled(
        self,
        view: PendingView,
        status: BoardStatus,
        decision: ApprovalDecision,
        source: DecisionSource,
        who: str,
    ) -> None:
        """Queue the POST of how an approval ended: decided, expired or withdrawn."""
        payload: dict[str, object] = {
            "event": SETTLED_EVENT,
            "approval": {"approval_id": view.approval_id, "thread_id": view.thread_id,
                         "call_id": view.call_id, "caller_subject": view.caller_subject},
            "status": status, "decision": decision, "source": source, "operator": who,
        }  # fmt: skip
        self._spawn(SETTLED_EVENT, view.approval_id, payload)

    def _spawn(self, event: str, approval_id: str, payload: dict[str, object]) -> None:
        payload["router_id"] = self._router_id
        body = json.dumps(payload, separators=(",", ":")).encode()
        self._tasks.spawn(self._deliver(event, approval_id, body), name=f"webhook-{approval_id}")

    async def _deliver(self, event: str, approval_id: str, body: bytes) -> None:
        config = self._config
        backoff = Backoff(config.retry_backoff_ms / 1000, float("inf"))
        for attempt in range(config.max_retries + 1):
            error = await asyncio.to_thread(self._post, event, body)
            if error is None:
                self._on_attempt("delivered")
                return
            last = attempt == config.max_retries
            self._on_attempt("failed" if last else "retried")
            if last:
                self._warn(f"approval webhook: {event} {approval_id} not delivered: {error}")
                return
            await asyncio.sleep(backoff.next())

    def _post(self, event: str, body: bytes) -> str | None:
        """One attempt (worker thread); the error text, or None when a 2xx answered."""
        timestamp = str(int(time.time()))
        request = urllib.request.Request(
            self._config.url, data=body, method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Shellgate-Event": event,
                "X-Shellgate-Timestamp": timestamp,
                "X-Shellgate-Signature": signature(self._secret, timestamp, body),
            },
        )  # fmt: skip
        try:
            with _OPENER.open(request, timeout=self._config.timeout_ms / 1000) as reply:
                status = int(reply.status)
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return type(exc).__name__ + f": {reason}"
        return None if 200 <= status < 300 else f"HTTP {status}"

    def _warn(self, line: str) -> None:
        now = time.monotonic()
        if now - self._logged_at < _LOG_EVERY_S:
            self._suppressed += 1
            return
        extra = f" ({self._suppressed} more since the last report)" if self._suppressed else ""
        self._logged_at, self._suppressed = now, 0
        _log.warning("%s%s", line, extra)

    async def aclose(self) -> None:
        """Stop pending deliveries."""
        await self._tasks.aclose()
