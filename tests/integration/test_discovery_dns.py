"""Discovery against a real DNS server: routers (subprocesses in their own mount namespace,
with a resolv.conf naming a dnslib server on loopback) find, refresh, prune and fail fast
exactly as an operator running the Kubernetes layout would see (issue 15 item 4)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import completed, function_item, router_subprocess, turn
from tests.waiting import eventually

dnslib = pytest.importorskip("dnslib")
from dnslib.server import BaseResolver, DNSLogger, DNSServer  # noqa: E402

# A loopback address of its own for the name server (resolv.conf can only say port 53).
NAMESERVER = "127.53.0.1"
# Every module whose test name server binds NAMESERVER:53 shares this xdist group, so they
# run one after another (two servers cannot bind it at once).
NAMESERVER_GROUP = "nameserver-53"
pytestmark = pytest.mark.xdist_group(NAMESERVER_GROUP)
NAME = "execd.shellgate.test"
DAEMON_A, DAEMON_B = "127.0.0.2", "127.0.0.3"
SERVICE = "shellgate.v1.ToolRouterService"
SERVING = health_pb2.HealthCheckResponse.SERVING
# Discovery refreshes and probes run on their own intervals: each wait allows 15 s.
UNTIL_S = 15.0


class Zone(BaseResolver):  # type: ignore[misc]
    """One name's A records, changed by the test while the server runs (TTL 0)."""

    def __init__(self) -> None:
        self.addresses: list[str] = []
        self._lock = threading.Lock()

    def set(self, *addresses: str) -> None:
        """Replace the records."""
        with self._lock:
            self.addresses = list(addresses)

    def resolve(self, request: Any, handler: Any) -> Any:
        """A records for NAME; NXDOMAIN when it has none (a Service without endpoints)."""
        reply = request.reply()
        qname = str(request.q.qname).rstrip(".")
        with self._lock:
            addresses = list(self.addresses) if qname == NAME else []
        if not addresses:
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
        elif request.q.qtype == dnslib.QTYPE.A:
            for address in addresses:
                reply.add_answer(
                    dnslib.RR(request.q.qname, dnslib.QTYPE.A, rdata=dnslib.A(address), ttl=0)
                )
        return reply


def _namespaces_work() -> str | None:
    """Why routers cannot get their own resolv.conf here, or None when they can."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         "mount --bind /etc/hostname /etc/resolv.conf"],
        capture_output=True, timeout=10,
    )  # fmt: skip
    if probe.returncode != 0:
        return f"no mount namespaces: {probe.stderr.decode().strip()}"
    return None


@pytest.fixture
def zone(tmp_path: Path) -> Iterator[tuple[Zone, list[str]]]:
    """A running name server and the wrapper that runs a command against it."""
    why = _namespaces_work()
    if why is not None:
        pytest.skip(why)
    zone = Zone()
    try:
        server = DNSServer(
            zone, port=53, address=NAMESERVER, logger=DNSLogger("-request,-reply,-recv,-send")
        )
    except OSError as exc:
        pytest.skip(f"cannot bind {NAMESERVER}:53: {exc}")
    server.start_thread()
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(f"nameserver {NAMESERVER}\noptions timeout:1 attempts:1\n")
    wrapper = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(resolv)]  # fmt: skip
    try:
        yield zone, wrapper
    finally:
        server.stop()
        # stop() ends the serving thread but leaves the socket open.
        server.server.server_close()


def _shared_free_port() -> int:
    """A port free on both daemon addresses (discovery dials every address on one port)."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind((DAEMON_A, 0))
            port = a.getsockname()[1]
            with contextlib.suppress(OSError):
                b.bind((DAEMON_B, port))
                return int(port)
    raise RuntimeError("no port free on both daemon addresses")


def _config(tmp_path: Path, name: str, port: int, refresh_ms: int) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        "local_environment = false\n"
        "environment_probe_interval_ms = 300\n"
        "[[discovery]]\n"
        f'dns_name = "{NAME}"\nport = {port}\nid_prefix = "ex"\n'
        f"refresh_interval_ms = {refresh_ms}\n"
        "connect_timeout_ms = 3000\nprune_after_ms = 500\nmiss_refresh_min_interval_ms = 200\n"
    )
    return path


def _health(channel: grpc.Channel) -> tuple[int, int]:
    stub = health_pb2_grpc.HealthStub(channel)
    overall = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
    router = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=5).status
    return overall, router


def _envs(stub: router_pb2_grpc.ToolRouterServiceStub) -> dict[str, router_pb2.EnvironmentStatus]:
    listed = stub.ListEnvironments(router_pb2.ListEnvironmentsRequest(), timeout=10)
    return {e.environment_id: e for e in listed.environments}


def _run(
    stub: router_pb2_grpc.ToolRouterServiceStub, env_id: str, args: dict[str, Any], call_id: str
) -> router_pb2.ExecutionCompleted:
    request = router_pb2.ExecuteRequest(
        thread_id="dns", turn=turn(environment_id=env_id, cwd="/tmp"),
        item=function_item("exec_command", args, call_id),
    )  # fmt: skip
    return completed(list(stub.Execute(request, timeout=60)))


def test_discovery_through_real_dns(tmp_path: Path, zone: tuple[Zone, list[str]]) -> None:
    records, wrapper = zone
    port = _shared_free_port()
    env_a, env_b = f"ex-{DAEMON_A}", f"ex-{DAEMON_B}"
    with (
        daemon_subprocess(["--listen", f"{DAEMON_A}:{port}"]) as daemon_a,
        daemon_subprocess(["--listen", f"{DAEMON_B}:{port}"]),
        router_subprocess(
            ["--config", str(_config(tmp_path, "fast", port, 300))], wrapper=wrapper
        ) as (_fast_proc, fast_port),
        grpc.insecure_channel(f"127.0.0.1:{fast_port}") as fast_channel,
    ):
        fast = router_pb2_grpc.ToolRouterServiceStub(fast_channel)
        # Discovery-only with nothing in DNS: it starts, but is not ready (both names).
        time.sleep(0.5)
        assert _health(fast_channel) == (health_pb2.HealthCheckResponse.NOT_SERVING,) * 2
        assert _envs(fast) == {}
        # The first lookup that finds a daemon makes it serve.
        records.set(DAEMON_A)
        eventually(lambda: _health(fast_channel) == (SERVING, SERVING), "SERVING", UNTIL_S)
        eventually(lambda: _envs(fast).get(env_a, router_pb2.EnvironmentStatus()).reachable,
                   "daemon A reachable", UNTIL_S)  # fmt: skip
        assert list(_envs(fast)) == [env_a]

        # A replica that refreshes rarely: B appears in DNS after its first lookup, and
        # the first call naming B looks again instead of answering "unknown environment".
        with (
            router_subprocess(
                ["--config", str(_config(tmp_path, "slow", port, 600_000))], wrapper=wrapper
            ) as (_slow_proc, slow_port),
            grpc.insecure_channel(f"127.0.0.1:{slow_port}") as slow_channel,
        ):
            slow = router_pb2_grpc.ToolRouterServiceStub(slow_channel)
            eventually(
                lambda: _health(slow_channel) == (SERVING, SERVING),
                "second router SERVING",
                UNTIL_S,
            )
            records.set(DAEMON_A, DAEMON_B)
            assert env_b not in _envs(slow)
            # Past miss_refresh_min_interval_ms since its first lookup (else rate-limited).
            time.sleep(0.3)
            done = _run(slow, env_b, {"cmd": "echo from-b"}, "b1")
            assert done.exit_code == 0 and "from-b" in done.output_text, done.output_text
            assert env_b in _envs(slow)

            # Pruning: a session on B keeps it listed after B leaves DNS, until it ends.
            eventually(lambda: env_b in _envs(fast), "fast router finds B", UNTIL_S)
            session = _run(fast, env_b, {"cmd": "sleep 30", "yield_time_ms": 300}, "b2")
            assert session.HasField("session_id"), session.output_text
            records.set(DAEMON_A)
            eventually(lambda: not _envs(fast)[env_b].reachable, "B unreachable once gone", UNTIL_S)
            assert "no longer resolved" in _envs(fast)[env_b].last_error
            time.sleep(1.0)  # past prune_after_ms and several refreshes
            assert env_b in _envs(fast), "pruned while a session still runs on it"
            fast.TerminateSession(
                router_pb2.TerminateSessionRequest(thread_id="dns", session_id=session.session_id),
                timeout=10,
            )
            eventually(
                lambda: env_b not in _envs(fast), "B pruned after its session ended", UNTIL_S
            )
            # Back in DNS: found again under the same id.
            records.set(DAEMON_A, DAEMON_B)
            eventually(lambda: env_b in _envs(fast), "B found again", UNTIL_S)

            # A dies: both replicas say so within a probe interval, and calls fail fast.
            daemon_a.proc.send_signal(signal.SIGKILL)
            daemon_a.proc.wait(10)
            for stub in (fast, slow):
                eventually(lambda s=stub: not _envs(s)[env_a].reachable, "A unreachable", UNTIL_S)  # type: ignore[misc]
            for i in range(3):
                started = time.monotonic()
                failed = _run(fast, env_a, {"cmd": "true"}, f"a{i}")
                elapsed = time.monotonic() - started
                assert failed.termination == router_pb2.TERMINATION_REASON_ENVIRONMENT_LOST
                assert "circuit open" in failed.output_text, failed.output_text
                # Below the 3 s connect timeout: nobody waited for the dead daemon. A fails-fast
                # bound, not a speed target: an open circuit answers in ~10 ms, and 2.5 s
                # leaves a loaded 2-core box room while still telling the two apart.
                assert elapsed < 2.5, elapsed
            assert "circuit open" in _envs(slow)[env_a].last_error
            # The other daemon is unaffected.
            assert _run(fast, env_b, {"cmd": "echo still"}, "b3").exit_code == 0
