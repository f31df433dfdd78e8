"""A plaintext listener serving only grpc.health.v1 (for Kubernetes native `grpc:` probes).

The kubelet's gRPC prober cannot speak TLS, so a daemon whose main port serves TLS offers
its health statuses on a second, plaintext port. That port shares the main port's
HealthServicer, so both always report the same status (NOT_SERVING from the start of a
shutdown), and it registers nothing else: no reflection, no ExecService, no router.
"""

from __future__ import annotations

import ipaddress

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from shellgate.execserver.wire_guard import DecodeGuardInterceptor


def split_listen(listen: str) -> tuple[str, int]:
    """(host, port) of a `host:port` / `[v6]:port` address; ValueError when malformed."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65_535:
        raise ValueError(f"listen address {listen!r} must be host:port")
    return host, int(port_text)


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback IP addresses (brackets around IPv6 allowed)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_health_listen(health_listen: str, listen: str) -> None:
    """Refuse a malformed health address or one that collides with the main listener.

    Any host is accepted without TLS or `insecure`: the port exposes only SERVING /
    NOT_SERVING, which is no more than a TCP connect to the main port already tells.
    """
    if not health_listen:
        return
    port = split_listen(health_listen)[1]
    if port != 0 and port == split_listen(listen)[1]:
        raise ValueError(f"health_listen {health_listen} uses the main listener's port")


async def start_health_listener(address: str, health: HealthServicer) -> tuple[grpc.aio.Server, int]:
    """Bind `address` (plaintext), serve only `health` there, return the server and port."""
    server = grpc.aio.server(
        interceptors=[DecodeGuardInterceptor()],
        # Health requests are tiny; a small limit keeps this unauthenticated port cheap.
        options=[("grpc.max_receive_message_length", 64 * 1024)],
        maximum_concurrent_rpcs=64,
    )
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    port = server.add_insecure_port(address)
    await server.start()
    return server, port
