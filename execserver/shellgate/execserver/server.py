"""The grpc.aio daemon: ExecService + health + reflection, TLS/token, graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import grpc
from grpc_health.v1._async import HealthServicer
from shellgate.common.auth import Authenticator, TokenEntry, load_tokens
from shellgate.common.grpc.health_listener import (
    check_health_listen,
    set_serving,
    start_with_health,
)
from shellgate.common.grpc.listen import is_loopback_host, split_listen
from shellgate.common.grpc.output_encoding import add_with_pre_encoded
from shellgate.common.grpc.server import ServerTls, Service, build_server
from shellgate.common.local_token import LocalToken
from shellgate.common.metrics_http import (
    MetricsEndpoint,
    check_metrics_listen,
    start_metrics_server,
)
from shellgate.common.process.base import Backend
from shellgate.common.process.local import LocalBackend
from shellgate.common.process.run_as import RunAs
from shellgate.common.tasks import cancel_and_wait
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.info import HostInfo, local_host_info
from shellgate.execserver.process_table import ProcessTable, TableLimits
from shellgate.execserver.servicer import ExecServicer
from shellgate.execserver.session_output import SERVICE_NAME as SESSION_OUTPUT_SERVICE
from shellgate.execserver.session_output import (
    SessionOutputServicer,
    add_session_output_service,
)
from shellgate.v1 import exec_pb2, exec_pb2_grpc

log = logging.getLogger(__name__)
SERVICE_NAME = exec_pb2.DESCRIPTOR.services_by_name["ExecService"].full_name


# Streams whose output events the servicer yields pre-encoded (see shellgate.common.grpc.output_encoding).
_PRE_ENCODED = ("Start", "Attach")


def add_exec_service(servicer: ExecServicer, server: grpc.aio.Server) -> None:
    """Register ExecService like the generated code, with the pre-encoded event streams."""
    add_with_pre_encoded(
        exec_pb2_grpc.add_ExecServiceServicer_to_server, servicer, server, _PRE_ENCODED
    )


def _credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if not config.tls_cert_file:
        return None
    tls = ServerTls(config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file)
    return tls.credentials()


async def build_backend(config: ServerConfig) -> tuple[Backend, HostInfo]:
    """The configured backend and the host facts GetInfo reports."""
    if config.backend == "ssh":
        from shellgate.execserver.backends.ssh import SshBackend

        ssh = SshBackend(config.ssh, config.process)
        return ssh, await ssh.host_info()
    run_as = RunAs.resolve(config.run_as) if config.run_as else None
    return LocalBackend(config.process, run_as=run_as), local_host_info(config.root)


def table_limits(config: ServerConfig) -> TableLimits:
    """The process table's bounds from the configuration."""
    return TableLimits(
        max_processes_per_caller=config.max_processes_per_caller,
        max_processes_total=config.max_processes_total,
        retained_bytes=config.retained_bytes,
        exited_retention_ms=config.exited_retention_ms,
        owner_ttl_ms=config.owner_ttl_ms,
        idempotency_ttl_ms=config.idempotency_ttl_ms,
        exit_drain_ms=config.exit_drain_ms,
        exit_drain_cap_ms=config.exit_drain_cap_ms,
        slow_consumer_stall_ms=config.slow_consumer_stall_ms,
    )


@dataclass
class RunningServer:
    """A started daemon: its bound port and the pieces shutdown needs."""

    server: grpc.aio.Server
    port: int
    table: ProcessTable
    servicer: ExecServicer
    health: HealthServicer
    # Owned here: stop() cancels and awaits it.
    sweeper: asyncio.Task[None]
    # The plaintext health-only listener (health_listen), when configured.
    health_server: grpc.aio.Server | None = None
    health_port: int | None = None
    # The generated local token (the default on loopback without credentials).
    local_token: LocalToken | None = None
    # The host facts GetInfo reports (shared with the Codex-protocol listener).
    host_info: HostInfo | None = None
    # GET /metrics (metrics_listen), when configured, and its bound port.
    metrics_server: asyncio.Server | None = None
    metrics_port: int | None = None

    async def stop(self, grace_ms: int = 5_000) -> None:
        """NOT_SERVING, stop accepting, kill every process group, then stop the server."""
        await set_serving(self.health, SERVICE_NAME, False)
        await cancel_and_wait(self.sweeper, log=log)
        # Kill the processes first: their streams then end with exited/closed.
        await self.table.shutdown()
        await self.servicer.drain_background()
        await self.server.stop(grace_ms / 1000)
        # The health port goes last, so probes see NOT_SERVING for the whole shutdown.
        if self.health_server is not None:
            await self.health_server.stop(0)
        if self.metrics_server is not None:
            self.metrics_server.close()
            await self.metrics_server.wait_closed()
        if self.local_token is not None:
            self.local_token.withdraw()


async def start_server(config: ServerConfig) -> RunningServer:
    """Bind, register services, start; raises ValueError for an unsafe listen address."""
    try:
        host, _ = split_listen(config.listen)
    except ValueError as exc:
        raise ValueError(f"listen: {exc} (port 0-65535)") from exc
    creds = _credentials(config)
    if not is_loopback_host(host) and creds is None and not config.insecure:
        raise ValueError(f"refusing to listen on non-loopback {host} without TLS or --insecure")
    check_health_listen(config.health_listen, config.listen)
    endpoint = MetricsEndpoint.of(config)
    refused = check_metrics_listen(endpoint)
    if refused is not None:
        raise ValueError(refused)
    tokens = load_tokens(config.token_file) if config.token_file else ()
    local = None
    if config.wants_local_token():
        local = LocalToken("execserver")
        tokens = (TokenEntry("local", local.token.encode()),)
    auth = Authenticator(tokens, mtls=bool(config.tls_client_ca_file))
    backend, host_info = await build_backend(config)
    limits = table_limits(config)
    table = ProcessTable(backend, limits)
    servicer = ExecServicer(config, table, host_info, auth)
    # Same table, same caller check (ExecServicer's own lookup): a session's capture is
    # its process's, visible only to the caller that started it (spec 06 §9).
    drains = SessionOutputServicer(servicer._get, servicer.metrics.rpc_rejected)
    built = build_server(
        services=(
            Service(SERVICE_NAME, lambda server: add_exec_service(servicer, server)),
            Service(
                SESSION_OUTPUT_SERVICE,
                lambda server: add_session_output_service(drains, server),
            ),
        ),
        listen=config.listen,
        credentials=creds,
        connections=config.connections,
        max_receive_bytes=config.max_message_bytes,
        max_send_bytes=config.max_message_bytes,
    )
    server, health, port = built.server, built.health, built.port
    health_server, health_port = await start_with_health(
        server.start, health, SERVICE_NAME, config.health_listen
    )
    # Owned by the RunningServer: stop() cancels and awaits it.
    sweeper = asyncio.create_task(table.run_sweeper(config.sweep_interval_ms), name="sweeper")
    log.info("exec-server listening on %s:%d (backend %s)", host, port, backend.name)
    if health_port is not None:
        log.info("exec-server health listening on port %d (plaintext, health only)", health_port)
    running = RunningServer(
        server, port, table, servicer, health, sweeper, health_server, health_port,
        host_info=host_info,
    )
    if endpoint.listen:
        running.metrics_server = await start_metrics_server(endpoint, servicer.metrics.render)
        running.metrics_port = running.metrics_server.sockets[0].getsockname()[1]
        log.info("exec-server metrics listening on port %d", running.metrics_port)
    if local is not None:
        try:
            path = local.publish(port)
        except OSError as exc:
            await running.stop(0)
            raise OSError(f"cannot write the local token file: {exc}") from exc
        running.local_token = local
        log.info("local callers authenticate with the token in %s", path)
    return running
