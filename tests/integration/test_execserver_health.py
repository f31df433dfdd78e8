"""health_listen: a plaintext port serving only grpc.health.v1, for both daemons.

The main ports serve TLS here, as in the Kubernetes manifests: the health port must answer
plaintext Check/Watch with the main port's status (NOT_SERVING from the start of a
shutdown) and expose nothing else.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.execserver.config import load_config
from shellgate.execserver.server import start_server
from shellgate.router.service.config import ConfigError, RouterConfig
from shellgate.router.service.server import start_router

from tests.certs import TlsFiles, make_tls
from tests.execserver_harness import daemon_config, daemon_subprocess, exec_stub, start_request

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
EXEC = "shellgate.v1.ExecService"
ROUTER = "shellgate.v1.ToolRouterService"


async def _check(port: int, service: str = "") -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        return int(reply.status)


async def _only_health(port: int, main_service: str) -> None:
    """The port answers health over plaintext and nothing else (no service, no reflection)."""
    assert await _check(port) == SERVING
    assert await _check(port, main_service) == SERVING
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        for method in (
            f"/{main_service}/GetInfo",
            f"/{main_service}/ListTools",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await channel.unary_unary(method)(b"", timeout=5)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED, method
        # The decode guard is installed there too.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await channel.unary_unary("/grpc.health.v1.Health/Check")(b"\xff\xff", timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def _watch_through_stop(
    port: int, main_service: str, stop: Callable[[], Awaitable[None]], check_during: bool
) -> list[int]:
    """Statuses a Watch on the health port sees while the daemon shuts down."""
    seen: list[int] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        call: AsyncIterator[Any] = stub.Watch(
            health_pb2.HealthCheckRequest(service=main_service), timeout=20
        )
        iterator = call.__aiter__()
        seen.append(int((await iterator.__anext__()).status))
        stopping = asyncio.ensure_future(stop())
        try:
            seen.append(int((await asyncio.wait_for(iterator.__anext__(), 10)).status))
            if check_during:
                # Still answering Check, with NOT_SERVING, while the shutdown goes on.
                assert not stopping.done()
                assert await _check(port) == NOT_SERVING
        finally:
            await stopping
    return seen


def _tls_main(tmp_path: Path) -> TlsFiles:
    return make_tls(tmp_path / "tls")


def test_execserver_health_port_is_plaintext_health_only(tmp_path: Path) -> None:
    tls = _tls_main(tmp_path)
    config = daemon_config(
        tls_cert_file=tls.server_cert, tls_key_file=tls.server_key, health_listen="127.0.0.1:0"
    )

    async def main() -> None:
        running = await start_server(config)
        stopped = False
        try:
            assert running.health_port and running.health_port != running.port
            await _only_health(running.health_port, EXEC)
            # The main port really is TLS: a plaintext health check there fails.
            with pytest.raises(grpc.aio.AioRpcError):
                await _check(running.port)
            # A process that ignores SIGTERM holds the shutdown for its kill grace (500 ms),
            # a window in which the health port must answer NOT_SERVING.
            creds = grpc.ssl_channel_credentials(root_certificates=tls.read("ca_cert"))
            async with exec_stub(f"127.0.0.1:{running.port}", creds) as stub:
                script = "trap '' TERM; echo ready; sleep 30"
                call = stub.Start(start_request(["sh", "-c", script], detach=True))
                async for message in call:
                    if message.event.WhichOneof("event") == "output":
                        break
                call.cancel()

            async def stop() -> None:
                await running.stop(2_000)

            seen = await _watch_through_stop(running.health_port, EXEC, stop, check_during=True)
            stopped = True
            assert seen == [SERVING, NOT_SERVING]
            with pytest.raises(grpc.aio.AioRpcError):
                await _check(running.health_port)
        finally:
            if not stopped:
                await running.stop(2_000)

    asyncio.run(main())


def test_router_health_port_is_plaintext_health_only(tmp_path: Path) -> None:
    tls = _tls_main(tmp_path)
    config = RouterConfig(
        local_token=False,
        listen="127.0.0.1:0",
        tls_cert_file=tls.server_cert,
        tls_key_file=tls.server_key,
        health_listen="127.0.0.1:0",
    )

    async def main() -> None:
        running = await start_router(config)
        stopped = False
        try:
            assert running.health_port and running.health_port != running.port
            await _only_health(running.health_port, ROUTER)
            seen = await _watch_through_stop(
                running.health_port, ROUTER, running.stop, check_during=False
            )
            stopped = True
            assert seen == [SERVING, NOT_SERVING]
        finally:
            if not stopped:
                await running.stop()

    asyncio.run(main())


def test_health_listen_is_off_by_default() -> None:
    assert RouterConfig().health_listen == ""
    assert daemon_config().health_listen == ""

    async def main() -> None:
        running = await start_server(daemon_config())
        try:
            assert running.health_server is None and running.health_port is None
        finally:
            await running.stop(2_000)

    asyncio.run(main())


def test_non_loopback_health_port_needs_no_tls_or_insecure() -> None:
    # Only health is exposed there, so 0.0.0.0 is fine for both daemons' config loaders.
    config = RouterConfig(health_listen="0.0.0.0:50061")
    config.validate()
    assert load_config(None, {"health_listen": "0.0.0.0:50062"}).health_listen == "0.0.0.0:50062"
    for bad in ("50061", "host:", ":x", "127.0.0.1:70000"):
        with pytest.raises(ConfigError, match="health_listen"):
            RouterConfig(health_listen=bad).validate()
    with pytest.raises(ConfigError, match="main listener"):
        RouterConfig(listen="127.0.0.1:50051", health_listen="0.0.0.0:50051").validate()


def test_execserver_refuses_a_health_port_equal_to_the_main_port() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="main listener"):
            await start_server(daemon_config(listen="127.0.0.1:50999", health_listen="[::1]:50999"))

    asyncio.run(main())


def test_execserver_cli_health_listen_flag() -> None:
    # The daemon subprocess with --health-listen serves health on that port.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with daemon_subprocess(["--health-listen", f"127.0.0.1:{port}", "--log-level", "WARNING"]):
        assert asyncio.run(_check(port, EXEC)) == SERVING


def test_watch_on_the_main_ports_passes_the_decode_guard() -> None:
    # grpc's Health.Watch streams through context.write (not an async generator): the
    # decode guard must serve that handler form too, on both daemons' main ports.
    async def first_status(port: int, service: str) -> int:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=service), timeout=5
            )
            async for reply in call:
                call.cancel()
                return int(reply.status)
        raise AssertionError("Watch ended without a status")

    async def main() -> None:
        daemon = await start_server(daemon_config())
        router = await start_router(RouterConfig(listen="127.0.0.1:0", local_token=False))
        try:
            assert await first_status(daemon.port, EXEC) == SERVING
            assert await first_status(router.port, ROUTER) == SERVING
        finally:
            await daemon.stop(2_000)
            await router.stop()

    asyncio.run(main())
