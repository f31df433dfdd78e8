"""A plaintext listener serving only grpc.health.v1 (for Kubernetes native `grpc:` probes).

The kubelet's gRPC prober cannot speak TLS, so a daemon whose main port serves TLS offers
its health statuses on a second, plaintext port. That port shares the main port's
HealthServicer, so both always report the same status (NOT_SERVING from the start of a
shutdown), and it registers nothing else: no reflection, no ExecService, no router.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from shellgate.common.grpc.listen import EXCLUSIVE_PORT_OPTIONS, bind, split_listen
from shellgate.common.grpc.wire_guard import DecodeGuardInterceptor


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
        options=[("grpc.max_receive_message_length", 64 * 1024), *EXCLUSIVE_PORT_OPTIONS],
        maximum_concurrent_rpcs=64,
    )
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    port = bind(server, address)
    await server.start()
    return server, port


async def set_serving(health: HealthServicer, service: str, serving: bool) -> None:
    """Report `service` and the overall status ("") as SERVING or NOT_SERVING."""
    status = (
        health_pb2.HealthCheckResponse.SERVING
        if serving
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )
    await health.set(service, status)
    await health.set("", status)


async def start_with_health(
    start: Callable[[], Awaitable[None]],
    health: HealthServicer,
    service: str,
    health_listen: str,
    *,
    ready: Callable[[], bool] = lambda: True,
) -> tuple[grpc.aio.Server | None, int | None]:
    """Run `start` (the main port and what must come up with it) between NOT_SERVING and
    SERVING (when `ready()` says so; its owner reports SERVING later otherwise), with the
    optional health-only listener up first; returns that listener.

    The health servicer starts out SERVING for "", so it is set NOT_SERVING before any
    port answers. If `start` fails, the health listener is stopped again.
    """
    await set_serving(health, service, False)
    health_server, health_port = None, None
    if health_listen:
        health_server, health_port = await start_health_listener(health_listen, health)
    try:
        await start()
    except BaseException:
        if health_server is not None:
            await health_server.stop(0)
        raise
    await set_serving(health, service, ready())
    return health_server, health_port
