"""The approval webhook (docs/approvals.md): a real HTTP server on 127.0.0.1 receives the
signed POST; a failing webhook never delays the call."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.config_schema import ConfigError
from shellgate.router.service.approval_webhook import check_webhook_url
from shellgate.router.service.approvals_config import ApprovalsConfig, WebhookConfig
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, router_pb2

from tests.router_harness import completed, function_item, router_config, running_router, turn
from tests.waiting import eventually

SECRET = b"hook-secret"


class _Hook:
    """A loopback HTTP server that records POSTs and answers `status`."""

    def __init__(self, status: int) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.got = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.received.append((dict(self.headers), body))
                hook.got.set()
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[_Hook]:
    h = _Hook(200)
    yield h
    h.close()


def _router(tmp_path: Path, url: str) -> Any:
    (tmp_path / "tokens").write_text("agent tok-agent\nops tok-ops roles=operator\n")
    (tmp_path / "secret").write_text(SECRET.decode() + "\n")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "base.rules").write_text('prefix_rule(pattern=["git", "push"], decision="prompt")\n')
    webhook = WebhookConfig(
        url=url, secret_file=str(tmp_path / "secret"), timeout_ms=500, max_retries=1,
        retry_backoff_ms=50,
    )  # fmt: skip
    config = router_config(
        token_file=str(tmp_path / "tokens"), rules_dirs=(str(rules),), local_cwd=str(tmp_path),
        approvals=ApprovalsConfig(default_route="operator", keepalive_ms=100, webhook=webhook),
    )  # fmt: skip
    return running_router(config)


def _park_and_approve(router: Any) -> tuple[str, float]:
    args = {"cmd": "git push 2>/dev/null; echo pushed", "login": False}
    request = router_pb2.ExecuteRequest(
        thread_id="wh", turn=turn(), item=function_item("exec_command", args, "w1")
    )
    stream = router.stub.Execute(request, metadata=(("authorization", "Bearer tok-agent"),))
    started = time.monotonic()
    approval_id = ""
    for event in stream:
        if event.WhichOneof("event") == "approval_pending":
            approval_id = event.approval_pending.approval_id
            break
    pending_after = time.monotonic() - started
    approvals_pb2_grpc.ApprovalServiceStub(router.channel).DecideApproval(
        approvals_pb2.DecideApprovalRequest(
            approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
        ),
        metadata=(("authorization", "Bearer tok-ops"),), timeout=10,
    )  # fmt: skip
    assert completed(list(stream)).output_text.endswith("pushed\n")
    return approval_id, pending_after


def test_signed_post_verifies(tmp_path: Path, hook: _Hook) -> None:
    with _router(tmp_path, hook.url) as router:
        approval_id, _ = _park_and_approve(router)
        assert hook.got.wait(10)
        text = router.running.app.metrics.render().decode()
    headers, body = hook.received[0]
    assert headers["X-Shellgate-Event"] == "approval_pending"
    timestamp = headers["X-Shellgate-Timestamp"]
    expected = hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Shellgate-Signature"], f"sha256={expected}")
    payload = json.loads(body)
    assert payload["event"] == "approval_pending"
    assert payload["approval"]["approval_id"] == approval_id
    assert payload["approval"]["caller_subject"] == "agent"
    assert payload["router_id"]
    assert 'shellgate_approval_webhook_deliveries_total{outcome="delivered"}' in text


def _metrics_with(router: Any, needle: str) -> str | None:
    """The router's metrics text once it contains `needle` (None before)."""
    text = router.running.app.metrics.render().decode()
    return text if needle in text else None


def _settled(hook: _Hook) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        for headers, body in list(hook.received):
            if headers["X-Shellgate-Event"] == "approval_settled":
                timestamp = headers["X-Shellgate-Timestamp"]
                mac = hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256)
                assert headers["X-Shellgate-Signature"] == f"sha256={mac.hexdigest()}"
                return json.loads(body)  # type: ignore[no-any-return]
        return None

    def among() -> str:
        return f"approval_settled among {[h['X-Shellgate-Event'] for h, _ in hook.received]}"

    return eventually(settled, among, 10, 0.02)


def test_settled_event_names_the_decision_and_the_operator(tmp_path: Path, hook: _Hook) -> None:
    with _router(tmp_path, hook.url) as router:
        approval_id, _ = _park_and_approve(router)
        payload = _settled(hook)
    assert payload["event"] == "approval_settled"
    assert payload["approval"]["approval_id"] == approval_id
    assert payload["approval"]["caller_subject"] == "agent"
    assert (payload["status"], payload["decision"], payload["source"], payload["operator"]) == (
        "decided", "approved", "operator", "ops",
    )


def test_settled_event_when_the_caller_leaves(tmp_path: Path, hook: _Hook) -> None:
    with _router(tmp_path, hook.url) as router:
        args = {"cmd": "git push", "login": False}
        request = router_pb2.ExecuteRequest(
            thread_id="wh-leave", turn=turn(), item=function_item("exec_command", args, "w2")
        )
        stream = router.stub.Execute(request, metadata=(("authorization", "Bearer tok-agent"),))
        for event in stream:
            if event.WhichOneof("event") == "approval_pending":
                break
        stream.cancel()
        payload = _settled(hook)
    assert (payload["status"], payload["decision"], payload["source"]) == (
        "withdrawn", "abort", "caller",
    )


def test_redirects_are_not_followed(tmp_path: Path, hook: _Hook) -> None:
    # The signed body carries the command: it goes to the configured URL only.
    target = _Hook(200)

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(307)
            self.send_header("Location", target.url)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with _router(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/hook") as router:
            _park_and_approve(router)
            text = eventually(
                lambda: _metrics_with(router, 'outcome="failed"'), "a failed delivery counted", 10
            )
        assert 'shellgate_approval_webhook_deliveries_total{outcome="failed"}' in text
        assert target.received == []
    finally:
        server.shutdown()
        server.server_close()
        target.close()


@pytest.mark.parametrize("failing", ["http500", "refused"])
def test_failing_webhook_does_not_delay_the_call(tmp_path: Path, failing: str) -> None:
    server = _Hook(500) if failing == "http500" else None
    if server is not None:
        url = server.url
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    try:
        with _router(tmp_path, url) as router:
            _, pending_after = _park_and_approve(router)
            # A bound, not a speed target: the pending event comes in ~0.1 s, and a call
            # held for the webhook (500 ms timeout, one retry) would take about 1 s more.
            assert pending_after < 2
            text = eventually(
                lambda: _metrics_with(router, 'outcome="failed"} 2.0'), "both failures counted", 5
            )
            # Two events (approval_pending, approval_settled), each tried twice.
            assert 'shellgate_approval_webhook_deliveries_total{outcome="failed"} 2.0' in text
            assert 'shellgate_approval_webhook_deliveries_total{outcome="retried"} 2.0' in text
    finally:
        if server is not None:
            server.close()


def test_insecure_http_needs_loopback_or_opt_in() -> None:
    check_webhook_url(WebhookConfig(url="https://hooks.example.com/x"))
    check_webhook_url(WebhookConfig(url="http://127.0.0.1:9/x"))
    with pytest.raises(ConfigError, match="allow_insecure_http"):
        check_webhook_url(WebhookConfig(url="http://hooks.example.com/x"))
    check_webhook_url(WebhookConfig(url="http://hooks.example.com/x", allow_insecure_http=True))
    with pytest.raises(ConfigError):
        check_webhook_url(WebhookConfig(url="ftp://hooks.example.com/x"))
