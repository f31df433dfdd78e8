"""What the egress tests share: a name server for test names, loopback HTTP servers on one
port, and a router (or daemon) running in a mount namespace whose resolv.conf points at it."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.egress.config import NetworkConfig
from shellgate.router.service.approvals_config import ApprovalsConfig
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc, shell_pb2

from tests.integration.test_discovery_dns import NAMESERVER, _namespaces_work
from tests.router_harness import (
    Router,
    completed,
    function_item,
    router_config,
    running_router,
    turn,
)

dnslib = pytest.importorskip("dnslib")
from dnslib.server import BaseResolver, DNSLogger, DNSServer  # noqa: E402

ALLOWED_IP, LOOPBACK_IP, RAW_IP = "127.0.0.2", "127.0.0.1", "127.0.0.3"
# Names the zone answers: the allowed host, a denied one, one outside the lists, and a
# name allow-listed by the wildcard that resolves to 127.0.0.1 (a rebinding name).
NAMES = {
    "allowed.shellgate.test": ALLOWED_IP,
    "denied.shellgate.test": ALLOWED_IP,
    "second.shellgate.test": ALLOWED_IP,
    "rebind.shellgate.test": LOOPBACK_IP,
    "asked.example.test": ALLOWED_IP,
    "other.example.test": ALLOWED_IP,
}
NETWORK = (
    "[network]\nenabled = true\n"
    f'allowed_domains = ["*.shellgate.test", "{ALLOWED_IP}"]\n'
    'denied_domains = ["denied.shellgate.test"]\n'
)


class Names(BaseResolver):  # type: ignore[misc]
    """A records for NAMES (TTL 0); NXDOMAIN for everything else."""

    def resolve(self, request: Any, handler: Any) -> Any:
        """The name's one A record."""
        reply = request.reply()
        address = NAMES.get(str(request.q.qname).rstrip("."))
        if address is None:
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
        elif request.q.qtype == dnslib.QTYPE.A:
            reply.add_answer(
                dnslib.RR(request.q.qname, dnslib.QTYPE.A, rdata=dnslib.A(address), ttl=0)
            )
        return reply


@contextlib.contextmanager
def name_server(folder: Path) -> Iterator[list[str]]:
    """The running name server; yields the wrapper that runs a command against it."""
    why = _namespaces_work()
    if why is not None:
        pytest.skip(why)
    try:
        server = DNSServer(Names(), port=53, address=NAMESERVER,
                           logger=DNSLogger("-request,-reply,-recv,-send"))  # fmt: skip
    except OSError as exc:
        pytest.skip(f"cannot bind {NAMESERVER}:53: {exc}")
    server.start_thread()
    resolv = folder / "resolv.conf"
    resolv.write_text(f"nameserver {NAMESERVER}\noptions timeout:1 attempts:1\n")
    try:
        yield ["unshare", "-m", "--propagation", "private", "sh", "-c",
               'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(resolv)]  # fmt: skip
    finally:
        server.stop()
        server.server.server_close()


@dataclass
class Origins:
    """HTTP servers on one port of three loopback addresses, and the requests each got."""

    port: int
    hits: dict[str, list[str]] = field(default_factory=dict)
    hosts: dict[str, list[str]] = field(default_factory=dict)


def _handler(
    address: str, hits: list[str], hosts: list[str]
) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        # The Host header of each request, in order.
        host_headers = hosts

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            hits.append(self.command)
            self.host_headers.append(self.headers.get("host", ""))
            body = f"origin {address} answered {self.command}\n".encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _answer

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextlib.contextmanager
def origins() -> Iterator[Origins]:
    """The three servers, on a port free on all three addresses."""
    for _ in range(50):
        servers: list[http.server.ThreadingHTTPServer] = []
        found = Origins(0)
        try:
            for address in (ALLOWED_IP, LOOPBACK_IP, RAW_IP):
                found.hits[address], found.hosts[address] = [], []
                server = http.server.ThreadingHTTPServer(
                    (address, found.port),
                    _handler(address, found.hits[address], found.hosts[address]),
                )
                found.port = found.port or server.server_address[1]
                servers.append(server)
        except OSError:
            for server in servers:
                server.server_close()
            continue
        threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
        for thread in threads:
            thread.start()
        try:
            yield found
        finally:
            for server in servers:
                server.shutdown()
                server.server_close()
        return
    raise RuntimeError("no port free on all three addresses")


def governed_request(
    command: str,
    cwd: Path,
    *,
    env: str = "local",
    call: str = "",
    approval: int = 0,
    egress: shell_pb2.EgressNarrowing | None = None,
) -> router_pb2.ExecuteRequest:
    """exec_command under workspace-write with the network on (the proxy governs it), the
    turn's narrowing `egress` if given."""
    call = call or f"c-{uuid.uuid4().hex[:8]}"
    ctx = turn(cwd=str(cwd), environment_id=env,
               approval=approval or common_pb2.APPROVAL_POLICY_KIND_NEVER)  # fmt: skip
    ctx.permission_profile.CopyFrom(common_pb2.PermissionProfile(
        kind=common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE, network_access=True,
    ))  # fmt: skip
    if egress is not None:
        ctx.permission_profile.egress.CopyFrom(egress)
    return router_pb2.ExecuteRequest(
        thread_id=f"t-{call}", turn=ctx,
        item=function_item("exec_command", {"cmd": command, "yield_time_ms": 30000}, call),
    )  # fmt: skip


def run(stub: router_pb2_grpc.ToolRouterServiceStub, command: str, cwd: Path, **kw: Any) -> str:
    """The model's text for one governed command."""
    return completed(
        list(stub.Execute(governed_request(command, cwd, **kw), timeout=90))
    ).output_text


def egress_records(audit: Path) -> list[dict[str, Any]]:
    """The audit log's egress records, in order."""
    records = [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("type") == "egress"]


def unix_listener(path: Path) -> socket.socket:
    """A host unix socket a sandboxed command must not reach."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    return listener


@contextlib.contextmanager
def recording_origin(address: str) -> Iterator[tuple[int, list[bytes]]]:
    """An HTTP origin that keeps reading for a moment after a request's head (as one that
    ignores `Connection: close` would serve a pipelined request) and records every byte."""
    listener = socket.create_server((address, 0))
    received: list[bytes] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                conn.settimeout(1.0)
                with contextlib.suppress(TimeoutError):
                    while chunk := conn.recv(65536):
                        data += chunk
                received.append(data)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nrecorded\n"
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], received
    finally:
        listener.close()
        thread.join(5)


@contextlib.contextmanager
def prompt_router(
    tmp_path: Path, tokens: str, *, route: str, deadline_ms: int = 30_000
) -> Iterator[Router]:
    """A router whose rules make ALLOWED_IP's http a `prompt` network_rule (nothing else is
    allowed; loopback origins may be reached), approvals on `route`, audit to tmp_path."""
    token_file = tmp_path / "tokens"
    token_file.write_text(tokens)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "net.rules").write_text(
        f'network_rule(host="{ALLOWED_IP}", protocol="http", decision="prompt")\n'
    )
    config = router_config(
        token_file=str(token_file), rules_dirs=(str(rules),), local_cwd=str(tmp_path),
        audit_log=str(tmp_path / "audit.log"), audit_fsync="always",
        approvals=ApprovalsConfig(default_route=route, keepalive_ms=100, poll_ms=100,
                                  operator_deadline_ms=deadline_ms),
        network=NetworkConfig(enabled=True, allow_local_binding=True),
    )  # fmt: skip
    with running_router(config) as router:
        yield router
