"""Start the Codex-protocol fronts from the CLI: beside a gRPC daemon, or stdio alone."""

from __future__ import annotations

import os

from shellgate.execserver.codex.protocol import CodexContext
from shellgate.execserver.codex.stdio import serve_stdio
from shellgate.execserver.codex.ws import CodexWsServer, start_codex_ws
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.process_table import ProcessTable
from shellgate.execserver.server import RunningServer, build_backend, table_limits


async def start_beside(running: RunningServer, config: ServerConfig, url: str) -> CodexWsServer:
    """The WebSocket listener over the running daemon's own process table."""
    assert running.host_info is not None
    ctx = CodexContext(config, running.table, running.host_info, os.environ)
    return await start_codex_ws(
        ctx, url, token_file=config.token_file,
        tls_cert=config.tls_cert_file, tls_key=config.tls_key_file,
    )  # fmt: skip


async def run_stdio(config: ServerConfig) -> None:
    """One stdio session on its own table and backend (the configured one: local or SSH)."""
    backend, host = await build_backend(config)
    table = ProcessTable(backend, table_limits(config))
    try:
        await serve_stdio(CodexContext(config, table, host, os.environ))
    finally:
        await table.shutdown()
