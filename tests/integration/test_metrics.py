"""Every metric docs/operations.md lists is scraped from live daemons and moves (issue 19)."""

from __future__ import annotations

import asyncio
import re
import socket
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from shellgate.router.runtime.environments.remote.environment import RemoteConfig
from shellgate.v1 import exec_pb2, exec_pb2_grpc, router_pb2

from tests.execserver_harness import daemon_subprocess
from tests.paths import REPO_ROOT
from tests.router_harness import Router, function_item, router_config, running_router, turn
from tests.waiting import eventually

DOC = (REPO_ROOT / "docs" / "operations.md").read_text()
# Moved only with a shared store: tests/integration/test_replicas_redis.py scrapes them.
NEEDS_REDIS = re.compile(r"^shellgate_shared_state_")
# Moved only by operator-routed approvals: tests/integration/test_operator_approvals.py
# (decisions) and test_approval_webhook.py (deliveries) scrape them.
NEEDS_OPERATOR = re.compile(r"^shellgate_(operator_decisions|approval_webhook_deliveries)")
# Moved only by a governed sandboxed command's requests: tests/integration/test_egress_proxy.py.
NEEDS_EGRESS = re.compile(r"^shellgate_(execserver_)?egress_decisions")


def documented() -> dict[str, str]:
    """metric -> daemon, from the table under `## Metrics`."""
    section = DOC.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(shellgate_\w+)` \| ([^|]+) \|", section, flags=re.M)
    assert len(rows) >= 20, rows
    return {name: daemon.strip() for name, daemon in rows}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int, token: str | None = None) -> dict[str, float]:
    """Metric name (as documented) -> sum over its series (histograms: observations)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=5) as reply:
        text = reply.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.type == "histogram":
                if sample.name != f"{family.name}_count":
                    continue
                name = family.name
            else:
                name = sample.name
            out[name] = out.get(name, 0.0) + sample.value
    return out


def execute(router: Router, item: str, args: dict[str, object], call_id: str, env: str = "local",
            thread: str = "m") -> list[router_pb2.ExecuteResponse]:  # fmt: skip
    request = router_pb2.ExecuteRequest(
        thread_id=thread, turn=turn(environment_id=env, approval=3),
        item=function_item(item, {"login": False, **args}, call_id),
    )  # fmt: skip
    return list(router.stub.Execute(request, timeout=30))


@pytest.mark.timeout(120)
def test_every_documented_metric_moves(tmp_path: Path) -> None:
    metrics = documented()
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "base.rules").write_text('prefix_rule(pattern=["touch"], decision="prompt")\n')
    token_file = tmp_path / "metrics-token"
    token_file.write_text("scrape-4c1f0a9e\n")
    daemon_metrics = free_port()
    daemon_toml = tmp_path / "execserver.toml"
    daemon_toml.write_text(f'metrics_listen = "127.0.0.1:{daemon_metrics}"\n')
    with daemon_subprocess(["--config", str(daemon_toml)]) as daemon:
        router_metrics = free_port()
        config = router_config(
            local_cwd=str(tmp_path), rules_dirs=(str(rules),),
            metrics_listen=f"127.0.0.1:{router_metrics}", metrics_token_file=str(token_file),
            environments=(RemoteConfig("build", daemon.target, reconnect_initial_backoff_ms=100),),
            environment_probe_interval_ms=100,
            # The audit gauges: the head moves with every record, a checkpoint 100 ms after.
            audit_log=str(tmp_path / "audit" / "audit.log"), audit_checkpoint_interval_ms=100,
        )  # fmt: skip
        with running_router(config) as router:
            snaps: list[dict[str, float]] = []

            def snap() -> None:
                snaps.append(scrape(router_metrics, "scrape-4c1f0a9e") | scrape(daemon_metrics))

            with pytest.raises(urllib.error.HTTPError, match="401"):
                scrape(router_metrics)
            snap()
            # A call on each environment; the remote one stays a live session.
            events = execute(router, "exec_command", {"cmd": "printf hello"}, "c1")
            assert events[-1].completed.exit_code == 0
            args = {"cmd": "printf hi; sleep 3", "yield_time_ms": 300}
            events = execute(router, "exec_command", args, "c2", env="build")
            assert events[-1].completed.session_id
            # A parked call.
            asked = execute(router, "shell_command", {"command": "touch x"}, "c3")
            assert asked[-1].WhichOneof("event") == "approval_required"
            snap()
            # Error statuses on both daemons.
            with pytest.raises(grpc.RpcError):
                list(router.stub.Execute(router_pb2.ExecuteRequest(thread_id="m"), timeout=10))
            with grpc.insecure_channel(daemon.target) as channel, pytest.raises(grpc.RpcError):
                exec_pb2_grpc.ExecServiceStub(channel).Read(
                    exec_pb2.ReadRequest(process_id="no-such"), timeout=10
                )
            # A rules reload that fails (the last good policy stays).
            (rules / "broken.rules").write_text("prefix_rule(\n")
            reload = asyncio.run_coroutine_threadsafe(
                router.running.app.reload_rules(), router.loop
            )
            assert reload.result(30) is not None and not reload.result().ok
            snap()
            # The daemon goes away: unreachable, then the circuit opens and refuses calls.
            daemon.proc.terminate()
            daemon.proc.wait(10)
            eventually(
                lambda: scrape(router_metrics, "scrape-4c1f0a9e")[
                    "shellgate_environments_unreachable"
                ] == 1,
                "the router saw the daemon go",
            )  # fmt: skip
            for n in range(5):
                execute(router, "exec_command", {"cmd": "true"}, f"d{n}", env="build")
            snaps.append(scrape(router_metrics, "scrape-4c1f0a9e"))
    first = snaps[0]
    not_moved = []
    for name, daemon_kind in metrics.items():
        if NEEDS_REDIS.match(name):
            assert "Redis" in daemon_kind, name
            continue
        if NEEDS_OPERATOR.match(name):
            assert "operator route" in daemon_kind, name
            continue
        if NEEDS_EGRESS.match(name):
            assert "egress" in daemon_kind, name
            continue
        # A labelled metric has no series before its first event: absent counts as 0.
        assert any(name in s for s in snaps), f"{name} is documented but never served"
        if not any(s.get(name, 0.0) != first.get(name, 0.0) for s in snaps[1:]):
            not_moved.append(name)
    assert not not_moved, (not_moved, snaps)


def test_alert_rules_and_dashboard_use_only_documented_metrics() -> None:
    known = set(documented())
    for path in ("deploy/prometheus/alerts.yaml", "deploy/grafana/shellgate-dashboard.json"):
        used = set(re.findall(r"\b(shellgate_[a-z_]+)", (REPO_ROOT / path).read_text()))
        used = {name.removesuffix("_bucket") for name in used}
        assert used and used <= known, (path, used - known)
