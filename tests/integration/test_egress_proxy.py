"""Egress control: with `[network]` on, a sandboxed command with network reaches only the
hosts the policy allows, through the environment's egress proxy (docs/sandbox.md "Egress").

A real router (in a mount namespace whose resolv.conf points at a test name server, as the
discovery tests do) runs real commands under bubblewrap: curl and Python's urllib reach the
allowed host through the proxy; a denied host, a host outside the list, a name that
resolves to 127.0.0.1, a raw IP and every way around the proxy are refused; limited mode
refuses a POST; the audit log holds one record per egress decision.
"""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from shellgate.common.local_token import runtime_dir
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig
from shellgate.v1 import router_pb2_grpc, shell_pb2

from tests.child import stop_child
from tests.execserver_harness import daemon_subprocess
from tests.integration.egress_support import (
    ALLOWED_IP,
    LOOPBACK_IP,
    NETWORK,
    RAW_IP,
    egress_records,
    name_server,
    origins,
    recording_origin,
    run,
    unix_listener,
)
from tests.integration.test_discovery_dns import NAMESERVER_GROUP
from tests.integration.test_metrics import free_port
from tests.router_harness import router_config, router_subprocess, running_router

Stub = router_pb2_grpc.ToolRouterServiceStub
pytestmark = [
    # The test name server binds NAMESERVER:53, one at a time (tests/conftest.py).
    pytest.mark.xdist_group(NAMESERVER_GROUP),
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap sandbox"),
]
DENIED = "Codex blocked this request: domain denied by policy."
NOT_ALLOWED = "Codex blocked this request: domain not in allowlist (this is not a denylist block)."
LOCAL = "Codex blocked this request: local/private addresses not allowed."
LIMITED = "Codex blocked this request: method not allowed in limited mode."
PY_GET = ("python3 -c \"import urllib.request as u; "
          "print(u.urlopen('http://allowed.shellgate.test:{port}/', timeout=20).read().decode())\"")  # fmt: skip
PY_DIRECT = ("python3 -c \"import socket\ntry:\n socket.create_connection(('{ip}', {port}), "
             "timeout=5)\nexcept OSError as e: print('direct:', e)\"")  # fmt: skip
PIPELINED = ("python3 -c \"import socket, time\ns = socket.create_connection(('127.0.0.1', 3128))\n"
             "head = 'http://allowed.shellgate.test:{port}/ HTTP/1.1\\r\\nHost: x\\r\\n'\n"
             "s.sendall(('GET ' + head + '\\r\\n').encode())\ntime.sleep(0.3)\n"
             "s.sendall(('POST ' + head + 'Content-Length: 0\\r\\n\\r\\n').encode())\n"
             "print(s.makefile('rb').read().decode())\"")  # fmt: skip
PY_UNLINK = ("python3 -c \"import os\ntry:\n os.unlink('{path}')\nexcept OSError as e: "
             "print('unlink:', e)\"")  # fmt: skip
PY_UNIX = ("python3 -c \"import socket\ntry:\n socket.socket(socket.AF_UNIX).connect('{path}')\n"
           "except OSError as e: print('unix:', e)\"")  # fmt: skip


@contextlib.contextmanager
def governed_router(
    folder: Path, network: str, extra: str = "", wrapper: list[str] | None = None
) -> Iterator[Stub]:
    """A router whose local environment's egress is governed by `network` (in the test name
    server's mount namespace: its own, or the one `wrapper` enters)."""
    config = folder / "router.toml"
    audit = f'audit_log = "{folder / "audit.log"}"\naudit_fsync = "always"\n'
    config.write_text(f"{audit}{extra}{network}")
    with contextlib.ExitStack() as stack:
        if wrapper is None:
            wrapper = stack.enter_context(name_server(folder))
        _proc, port = stack.enter_context(
            router_subprocess(["--config", str(config)], wrapper=wrapper)
        )
        channel = stack.enter_context(grpc.insecure_channel(f"127.0.0.1:{port}"))
        yield router_pb2_grpc.ToolRouterServiceStub(channel)


def test_only_allowed_hosts_are_reached_through_the_proxy(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    host_socket = unix_listener(tmp_path / "host.sock")
    with origins() as web, governed_router(tmp_path, NETWORK) as stub:
        port = web.port
        url = f"http://allowed.shellgate.test:{port}/"
        # The allowed host answers curl (plain, through CONNECT, over SOCKS5) and urllib.
        assert f"origin {ALLOWED_IP} answered GET" in run(stub, f"curl -sS {url}", work)
        tunnel = run(stub, f"curl -sS -p {url}", work)
        assert f"origin {ALLOWED_IP} answered GET" in tunnel, tunnel
        socks = run(stub, f"curl -sS -x socks5h://127.0.0.1:3128 {url}", work)
        assert f"origin {ALLOWED_IP} answered GET" in socks, socks
        text = run(stub, PY_GET.format(port=port), work)
        assert f"origin {ALLOWED_IP} answered GET" in text, text
        assert web.hits[ALLOWED_IP] == ["GET"] * 4
        # Refused with Codex's texts, which the model reads in the command's output.
        denied = run(stub, f"curl -sS -i http://denied.shellgate.test:{port}/", work)
        assert "403" in denied and "x-proxy-error: blocked-by-denylist" in denied, denied
        assert DENIED in denied
        assert NOT_ALLOWED in run(stub, f"curl -sS http://other.example.test:{port}/", work)
        assert LOCAL in run(stub, f"curl -sS http://rebind.shellgate.test:{port}/", work)
        assert NOT_ALLOWED in run(stub, f"curl -sS http://{RAW_IP}:{port}/", work)
        socks_denied = run(stub, f"curl -sS -x socks5h://127.0.0.1:3128 "
                                 f"http://denied.shellgate.test:{port}/", work)  # fmt: skip
        assert "curl: (97)" in socks_denied, socks_denied
        # No way around the proxy: no route, no DNS, no host unix socket.
        bypass = run(stub, f"curl -sS --noproxy '*' http://{ALLOWED_IP}:{port}/", work)
        assert "curl: (7)" in bypass, bypass
        text = run(stub, PY_DIRECT.format(ip=ALLOWED_IP, port=port), work)
        assert "direct: [Errno 111] Connection refused" in text, text
        text = run(stub, f"curl -sS --noproxy '*' {url}", work)
        assert "curl: (6)" in text, text
        text = run(stub, PY_UNIX.format(path=tmp_path / "host.sock"), work)
        assert "unix: [Errno 1] Operation not permitted" in text, text
        # The proxy's socket: read-only for the command it serves (not removable).
        sockets = sorted(runtime_dir().glob("egress-*/proxy.sock"), key=lambda p: p.stat().st_mtime)
        text = run(stub, PY_UNLINK.format(path=sockets[-1]), work)
        assert "unlink: [Errno 30] Read-only file system" in text, text
        # The origin is asked for the host that was checked, whatever Host the client says.
        text = run(stub, f"curl -sS -H 'Host: internal.corp' {url}", work)
        assert f"origin {ALLOWED_IP} answered GET" in text, text
        assert web.hosts[ALLOWED_IP][-1] == f"allowed.shellgate.test:{port}"
        # Only the allowed requests reached a server.
        assert web.hits[ALLOWED_IP] == ["GET"] * 5
        assert web.hits[LOOPBACK_IP] == [] and web.hits[RAW_IP] == []
        # The servers themselves answer from outside the sandbox (the refusals were real).
        with urllib.request.urlopen(f"http://{RAW_IP}:{port}/", timeout=10) as answer:
            assert answer.read().decode() == f"origin {RAW_IP} answered GET\n"
    host_socket.close()
    records = egress_records(tmp_path / "audit.log")
    seen = [(r["host"], r["protocol"], r["decision"], r["reason"]) for r in records]
    assert seen == [
        ("allowed.shellgate.test", "http", "allow", "allowed"),
        ("allowed.shellgate.test", "https_connect", "allow", "allowed"),
        ("allowed.shellgate.test", "socks5_tcp", "allow", "allowed"),
        ("allowed.shellgate.test", "http", "allow", "allowed"),
        ("denied.shellgate.test", "http", "deny", "denied"),
        ("other.example.test", "http", "deny", "not_allowed"),
        ("rebind.shellgate.test", "http", "deny", "not_allowed_local"),
        (RAW_IP, "http", "deny", "not_allowed"),
        ("denied.shellgate.test", "socks5_tcp", "deny", "denied"),
        ("allowed.shellgate.test", "http", "allow", "allowed"),
    ]
    assert {r["environment"] for r in records} == {"local"}
    assert all(r["call_id"] and r["port"] == port for r in records), records


def test_limited_mode_refuses_a_post(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, governed_router(tmp_path, NETWORK + 'mode = "limited"\n') as stub:
        url = f"http://allowed.shellgate.test:{web.port}/"
        assert f"origin {ALLOWED_IP} answered GET" in run(stub, f"curl -sS {url}", work)
        assert LIMITED in run(stub, f"curl -sS -d x=1 {url}", work)
        # A POST pipelined behind a GET on the same connection is never forwarded.
        with recording_origin(ALLOWED_IP) as (port, received):
            text = run(stub, PIPELINED.format(port=port), work)
        assert "recorded" in text, text
        assert len(received) == 1 and received[0].startswith(b"GET / HTTP/1.1\r\n"), received
        assert b"POST" not in received[0], received
        # HTTPS CONNECT would hide the method: refused too.
        assert "curl: (56)" in run(stub, f"curl -sS -p {url}", work)
        assert web.hits[ALLOWED_IP] == ["GET"]
    reasons = [(r["protocol"], r["method"], r["reason"])
               for r in egress_records(tmp_path / "audit.log")]  # fmt: skip
    assert reasons == [
        ("http", "GET", "allowed"),
        ("http", "POST", "method_not_allowed"),
        ("http", "GET", "allowed"),
        ("https_connect", "CONNECT", "method_not_allowed"),
    ]


def test_a_daemon_governs_its_own_commands(tmp_path: Path) -> None:
    """The same policy on a daemon: its own proxy, its own lists, the same refusals."""
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "execserver.toml"
    metrics_port = free_port()
    config.write_text(f'root = "{work}"\nmetrics_listen = "127.0.0.1:{metrics_port}"\n{NETWORK}')
    with (
        origins() as web,
        name_server(tmp_path) as wrapper,
        daemon_subprocess(["--config", str(config)], wrapper=wrapper) as daemon,
    ):
        box = RemoteConfig("box", daemon.target, dial=DialSettings(insecure=True))
        # The router's network_rule denies hold on the daemon too (sent as the narrowing).
        rules = tmp_path / "rules"
        rules.mkdir()
        (rules / "net.rules").write_text(
            'network_rule(host="second.shellgate.test", protocol="http", decision="deny")\n'
        )
        routed = router_config(local_cwd=str(work), environments=(box,), rules_dirs=(str(rules),))
        with running_router(routed) as router:
            port, stub = web.port, router.stub
            second = f"curl -sS http://second.shellgate.test:{port}/"
            assert DENIED in run(stub, second, work, env="box")
            url = f"http://allowed.shellgate.test:{port}/"
            assert f"origin {ALLOWED_IP} answered GET" in run(stub, f"curl -sS {url}", work,
                                                             env="box")  # fmt: skip
            text = run(stub, PY_GET.format(port=port), work, env="box")
            assert f"origin {ALLOWED_IP} answered GET" in text, text
            assert DENIED in run(stub, f"curl -sS http://denied.shellgate.test:{port}/", work,
                                 env="box")  # fmt: skip
            assert LOCAL in run(stub, f"curl -sS http://rebind.shellgate.test:{port}/", work,
                                env="box")  # fmt: skip
            assert NOT_ALLOWED in run(stub, f"curl -sS http://{RAW_IP}:{port}/", work, env="box")
            bypass = run(stub, f"curl -sS --noproxy '*' http://{ALLOWED_IP}:{port}/", work,
                         env="box")  # fmt: skip
            assert "curl: (7)" in bypass, bypass
        assert web.hits[ALLOWED_IP] == ["GET", "GET"]
        assert web.hits[LOOPBACK_IP] == [] and web.hits[RAW_IP] == []
        scraped = _counted(_get(metrics_port), "shellgate_execserver_egress_decisions")
        assert scraped == {
            ("allow", "allowed", "http"): 2.0, ("deny", "denied", "http"): 2.0,
            ("deny", "not_allowed_local", "http"): 1.0, ("deny", "not_allowed", "http"): 1.0,
        }  # fmt: skip
        # The daemon's log line per decision (it keeps no audit log of its own).
        stop_child(daemon.proc)
        assert daemon.proc.stderr is not None
        log = daemon.proc.stderr.read().decode()
    decisions = [line.split("egress ", 1)[1].split(" caller=")[0]
                 for line in log.splitlines() if " egress " in line]  # fmt: skip
    assert decisions == [
        f"deny second.shellgate.test:{port} protocol=http method=GET reason=denied",
        f"allow allowed.shellgate.test:{port} protocol=http method=GET reason=allowed",
        f"allow allowed.shellgate.test:{port} protocol=http method=GET reason=allowed",
        f"deny denied.shellgate.test:{port} protocol=http method=GET reason=denied",
        f"deny rebind.shellgate.test:{port} protocol=http method=GET reason=not_allowed_local",
        f"deny {RAW_IP}:{port} protocol=http method=GET reason=not_allowed",
    ], log[-3000:]


def test_network_rules_join_the_lists_and_every_decision_is_counted(tmp_path: Path) -> None:
    """`network_rule` allow / deny join the lists; a prompt host is refused (no network
    approvals yet); shellgate_egress_decisions_total counts what the audit log records."""
    work = tmp_path / "work"
    work.mkdir()
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "net.rules").write_text(
        'network_rule(host="other.example.test", protocol="http", decision="allow")\n'
        'network_rule(host="allowed.shellgate.test", protocol="http", decision="deny")\n'
        'network_rule(host="asked.example.test", protocol="http", decision="prompt")\n'
    )
    metrics_port = free_port()
    extra = f'rules_dirs = ["{rules}"]\nmetrics_listen = "127.0.0.1:{metrics_port}"\n'
    with origins() as web, governed_router(tmp_path, NETWORK, extra) as stub:
        port = web.port
        allowed = run(stub, f"curl -sS http://other.example.test:{port}/", work)
        assert f"origin {ALLOWED_IP} answered GET" in allowed, allowed
        assert DENIED in run(stub, f"curl -sS http://allowed.shellgate.test:{port}/", work)
        asked = run(stub, f"curl -sS -i http://asked.example.test:{port}/", work)
        assert "Codex blocked this request by network policy." in asked, asked
        assert "x-proxy-error: blocked-by-policy" in asked, asked
        counted = _counted(_get(metrics_port), "shellgate_egress_decisions")
        assert web.hits[ALLOWED_IP] == ["GET"]
    assert counted == {
        ("allow", "allowed", "http"): 1.0,
        ("deny", "denied", "http"): 1.0,
        ("deny", "policy_denied", "http"): 1.0,
    }
    seen = [(r["host"], r["reason"]) for r in egress_records(tmp_path / "audit.log")]
    assert seen == [
        ("other.example.test", "allowed"),
        ("allowed.shellgate.test", "denied"),
        ("asked.example.test", "policy_denied"),
    ]


def _get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return str(reply.read().decode())


def _counted(text: str, family_name: str) -> dict[tuple[str, str, str], float]:
    """(decision, reason, protocol) -> count of one egress counter family."""
    return {
        (s.labels["decision"], s.labels["reason"], s.labels["protocol"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == family_name
        for s in family.samples
        if s.name.endswith("_total")
    }


def _narrowing_checks(stub: Stub, work: Path, port: int, env: str) -> None:
    """A turn narrows its environment's policy and cannot widen it."""
    only = shell_pb2.EgressNarrowing(
        mode=shell_pb2.EGRESS_MODE_LIMITED, allowed_domains=["allowed.shellgate.test"]
    )
    url = f"http://allowed.shellgate.test:{port}/"
    got = run(stub, f"curl -sS {url}", work, env=env, egress=only)
    assert f"origin {ALLOWED_IP} answered GET" in got, got
    assert LIMITED in run(stub, f"curl -sS -d x=1 {url}", work, env=env, egress=only)
    other = f"curl -sS http://denied-by-turn.shellgate.test:{port}/"
    assert NOT_ALLOWED in run(stub, other, work, env=env, egress=only)
    deny = shell_pb2.EgressNarrowing(denied_domains=["allowed.shellgate.test"])
    assert DENIED in run(stub, f"curl -sS {url}", work, env=env, egress=deny)
    widen = shell_pb2.EgressNarrowing(allowed_domains=["other.example.test", "*"])
    text = run(stub, f"curl -sS http://other.example.test:{port}/", work, env=env, egress=widen)
    assert NOT_ALLOWED in text, text
    # Without a narrowing the environment's policy holds as it is.
    assert "answered POST" in run(stub, f"curl -sS -d x=1 {url}", work, env=env)


def test_a_turn_narrows_its_environment_s_policy_locally_and_on_a_daemon(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "execserver.toml"
    config.write_text(f'root = "{work}"\n{NETWORK}')
    with (
        origins() as web,
        name_server(tmp_path) as wrapper,
        governed_router(tmp_path, NETWORK, wrapper=wrapper) as stub,
        daemon_subprocess(["--config", str(config)], wrapper=wrapper) as daemon,
    ):
        _narrowing_checks(stub, work, web.port, "local")
        box = RemoteConfig("box", daemon.target, dial=DialSettings(insecure=True))
        with running_router(router_config(local_cwd=str(work), environments=(box,))) as router:
            _narrowing_checks(router.stub, work, web.port, "box")
        assert web.hits[ALLOWED_IP] == ["GET", "POST", "GET", "POST"]
    reasons = [r["reason"] for r in egress_records(tmp_path / "audit.log")]
    assert reasons == ["allowed", "method_not_allowed", "not_allowed", "denied", "not_allowed",
                       "allowed"]  # fmt: skip
