"""The router daemon: ToolRouterService + health + reflection, TLS/token, graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer
from shellgate.common.grpc.health_listener import set_serving, start_with_health
from shellgate.common.grpc.output_encoding import add_with_pre_encoded
from shellgate.common.grpc.server import HEALTH_SERVICE_NAME, ServerTls, Service, build_server
from shellgate.common.local_token import LocalToken
from shellgate.common.metrics_http import (
    MetricsEndpoint,
    check_metrics_listen,
    start_metrics_server,
)
from shellgate.common.tasks import TaskSet, cancel_and_wait
from shellgate.common.tracing import enable_command_text
from shellgate.router.runtime.environments.remote.discovery import DnsDiscovery
from shellgate.router.runtime.environments.remote.monitor import run_health_probes
from shellgate.router.runtime.threads.sweeper import run_thread_sweeper
from shellgate.router.service.app import RouterApp
from shellgate.router.service.config import ConfigError, RouterConfig
from shellgate.router.service.wire.approvals import SERVICE_NAME as APPROVALS_NAME
from shellgate.router.service.wire.approvals import ApprovalServicer
from shellgate.router.service.wire.project_door import ProjectDoor, start_project_door
from shellgate.router.service.wire.servicer import ToolRouterServicer
from shellgate.v1 import approvals_pb2_grpc, router_pb2, router_pb2_grpc

if TYPE_CHECKING:
    from shellgate.router.service.console.listener import ConsoleListener

log = logging.getLogger(__name__)
SERVICE_NAME = router_pb2.DESCRIPTOR.services_by_name["ToolRouterService"].full_name
# Fraction of shutdown_grace_ms after which still-running processes are killed.
KILL_AT_GRACE_FRACTION = 0.8
HEALTH_NAME = HEALTH_SERVICE_NAME
# The health name of the shared thread store (Redis): NOT_SERVING while it is unreachable.
# The overall status ("") and ToolRouterService stay SERVING then (a degraded mode): every
# replica shares the one Redis, so taking them out of the load balancer would stop the
# calls that need no shared state too (docs/scaling.md).
SHARED_STATE_HEALTH_NAME = "shellgate.v1.SharedState"


def server_credentials(config: RouterConfig) -> grpc.ServerCredentials | None:
    """TLS credentials (mTLS when a client CA is configured), or None for plaintext."""
    if not config.tls:
        return None
    tls = ServerTls(config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file)
    return tls.credentials()


@dataclass
class RunningRouter:
    """A started router: the bound port and what shutdown needs."""

    server: grpc.aio.Server
    port: int
    app: RouterApp
    health: HealthServicer
    metrics_server: asyncio.AbstractServer | None = None
    # The plaintext health-only listener (health_listen), when configured.
    health_server: grpc.aio.Server | None = None
    health_port: int | None = None
    # The thread sweeper, DNS discovery, health probes and the store probe: owned here,
    # cancelled and awaited by stop() (a failure is logged when it happens).
    background: TaskSet = field(default_factory=lambda: TaskSet(log))
    stop_background: asyncio.Event = field(default_factory=asyncio.Event)
    # The generated local token's file (the default on loopback without credentials).
    local_token: LocalToken | None = None
    # The operator web console (console_listen), when configured.
    console: ConsoleListener | None = None
    # Project on a port of its own (project_listen), when configured.
    project_door: ProjectDoor | None = None

    async def stop(self) -> None:
        """NOT_SERVING, stop accepting, let in-flight calls end, kill every process."""
        # Set first: a discovery lookup finishing now must not report SERVING again.
        self.stop_background.set()
        await set_serving(self.health, SERVICE_NAME, False)
        await self.background.aclose()
        if self.console is not None:
            # First: its live streams end and no operator decides during the shutdown.
            await self.console.stop()
        grace_s = self.app.config.limits.shutdown_grace_ms / 1000
        if self.project_door is not None:
            # Before the main server: a Project it handed to the loop still gets its answer.
            await self.project_door.stop(grace_s * KILL_AT_GRACE_FRACTION)
        # In-flight calls get most of the grace period to finish on their own. Processes
        # still running then are killed by aclose *before* the server cancels the RPCs at
        # the end of the grace, so their streams still end with a paired `completed`.
        # Owned by stop(): awaited below.
        stopping = asyncio.ensure_future(self.server.stop(grace_s))
        await asyncio.wait({stopping}, timeout=grace_s * KILL_AT_GRACE_FRACTION)
        await self.app.aclose()
        await stopping
        if self.metrics_server is not None:
            self.metrics_server.close()
            await self.metrics_server.wait_closed()
        # Last, so probes see NOT_SERVING for the whole shutdown.
        if self.health_server is not None:
            await self.health_server.stop(0)
        if self.local_token is not None:
            self.local_token.withdraw()


async def start_router(
    config: RouterConfig, *, parent_env: Mapping[str, str] | None = None
) -> RunningRouter:
    """Validate the config, bind, register services and start serving."""
    config.validate()
    local = LocalToken("router") if config.wants_local_token() else None
    app = RouterApp(
        config, parent_env=parent_env, local_token=local.token if local is not None else None
    )
    # Process-wide (spans have no router): set or cleared by every router started here.
    redactor = app.redactor
    redact = redactor.text if redactor is not None else _unchanged
    enable_command_text(redact if config.otel_command_text else None)
    limits = config.limits
    # One servicer for both ports: the door shares its kept Project answers.
    servicer = ToolRouterServicer(app)
    built = build_server(
        services=_services(app, servicer),
        listen=config.listen,
        credentials=server_credentials(config),
        connections=config.connections,
        max_receive_bytes=limits.max_message_bytes,
        max_send_bytes=limits.max_send_message_bytes,
    )
    server, health, port = built.server, built.health, built.port
    endpoint = MetricsEndpoint.of(config)
    refused = check_metrics_listen(endpoint)
    if refused is not None:
        raise ConfigError(refused)
    metrics_server = None
    console: ConsoleListener | None = None
    door: ProjectDoor | None = None

    async def start() -> None:
        nonlocal metrics_server, console, door
        try:
            # The replica bus first: shared amendments are applied before the first call.
            await app.start()
            await server.start()
            if config.project_listen:
                loop = asyncio.get_running_loop()
                door = start_project_door(app, servicer, loop, server_credentials(config))
            if config.metrics_listen:
                metrics_server = await start_metrics_server(endpoint, app.metrics.render)
                if isinstance(metrics_server, asyncio.Server):  # the bound port (listen :0)
                    port_bound = metrics_server.sockets[0].getsockname()[1]
                    log.info("metrics listening on port %d", port_bound)
            if config.console_listen:
                # Imported only when configured: the console is an optional extra.
                from shellgate.router.service.console.listener import start_console

                console = await start_console(app)
        except BaseException:
            if metrics_server is not None:
                metrics_server.close()
            if door is not None:
                await door.stop(0)
            await server.stop(0)
            await app.aclose()
            raise

    health_server, health_port = await start_with_health(
        start, health, SERVICE_NAME, config.health_listen,
        ready=lambda: bool(app.environments.ids()),
    )  # fmt: skip
    running = RunningRouter(server, port, app, health, metrics_server, health_server, health_port)
    running.console, running.project_door = console, door
    if local is not None:
        try:
            local.publish(port)
        except OSError as exc:
            await running.stop()
            raise OSError(f"cannot write the local token file: {exc}") from exc
        running.local_token = local
    # Owned background tasks: cancelled and awaited by RunningRouter.stop().
    stop = running.stop_background
    await _watch_shared_state(running)
    sweeper = run_thread_sweeper(app.threads, limits.sweep_interval_ms, stop)
    running.background.spawn(sweeper, name="thread-sweeper")

    async def report_readiness() -> None:
        # Serving while there is an environment to run on: a discovery-only router is
        # NOT_SERVING until a lookup finds a daemon (and again if every one is pruned).
        if not stop.is_set():
            await set_serving(health, SERVICE_NAME, bool(app.environments.ids()))

    await report_readiness()
    for entry in config.discovery:
        discovery = DnsDiscovery(
            entry,
            app.environments,
            in_use=app.threads.environments_in_use,
            on_change=report_readiness,
        )
        running.background.spawn(discovery.run(stop), name=f"discovery-{entry.dns_name}")
    if config.environment_probe_interval_ms > 0:
        probes = run_health_probes(app.environments, config.environment_probe_interval_ms, stop)
        running.background.spawn(probes, name="environment-probes")
    log.info("router listening on port %d (%d environments)", port, len(app.environments.ids()))
    return running


def _services(app: RouterApp, servicer: ToolRouterServicer) -> tuple[Service, ...]:
    """ToolRouterService (`servicer`) and ApprovalService."""

    def add_router(server: grpc.aio.Server) -> None:
        # Execute yields its output chunks already serialized (see servicer.output_event_bytes);
        # coalesced batches, ExecuteOnce's reply and Project's (kept) answers are bytes too.
        add_with_pre_encoded(
            router_pb2_grpc.add_ToolRouterServiceServicer_to_server,
            servicer,
            server,
            ("Execute", "ExecuteOnce", "Project"),
        )

    def add_approvals(server: grpc.aio.Server) -> None:
        # Operator approvals (docs/approvals.md): the same listener and authentication.
        approvals_pb2_grpc.add_ApprovalServiceServicer_to_server(ApprovalServicer(app), server)

    return (Service(SERVICE_NAME, add_router), Service(APPROVALS_NAME, add_approvals))


async def _watch_shared_state(running: RunningRouter) -> None:
    """Report the shared store on its health name; with Redis, probe it in the background."""
    health, monitor, probe = running.health, running.app.store_monitor, running.app.store_probe
    serving, not_serving = (health_pb2.HealthCheckResponse.SERVING,
                            health_pb2.HealthCheckResponse.NOT_SERVING)  # fmt: skip
    if monitor is None or probe is None:
        await health.set(SHARED_STATE_HEALTH_NAME, serving)  # in memory: always there
        return

    async def report(up: bool) -> None:
        await health.set(SHARED_STATE_HEALTH_NAME, serving if up else not_serving)

    monitor.listen(report)
    running.background.spawn(
        monitor.run(probe, running.stop_background), name="store-probe"
    )


async def serve_forever(router: RunningRouter, stop: asyncio.Event) -> None:
    """Serve until `stop` is set (SIGTERM/SIGINT), then shut down gracefully."""
    # Both owned by serve_forever: the first to finish ends the wait, both are cancelled and
    # awaited (the stopper before the shutdown, the termination waiter after it).
    waiter = asyncio.ensure_future(router.server.wait_for_termination())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(stopper, log=log)
    try:
        await router.stop()
    finally:
        await cancel_and_wait(waiter, log=log)


def _unchanged(text: str) -> str:
    return text
