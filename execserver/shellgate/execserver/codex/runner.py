"""Start the Codex-protocol fronts from the CLI: beside a gRPC daemon, or stdio alone."""

from __future__ import annotations

import os

from shellgate.common.auth import TokenEntry, load_tokens
from shellgate.common.local_token import LocalToken
from shellgate.execserver.codex.door import LOCAL_CALLER
from shellgate.execserver.codex.protocol import CodexContext
from shellgate.execserver.codex.stdio import serve_stdio
from shellgate.execserver.codex.ws import CodexListen, CodexWsServer, start_codex_ws
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.process_table import ProcessTable
from shellgate.execserver.server import RunningServer, build_backend, table_limits


def codex_credentials(
    running: RunningServer, config: ServerConfig, url: str
) -> tuple[tuple[TokenEntry, ...] | None, LocalToken | None]:
    """The tokens the WebSocket listener requires, and the local token to publish for it.

    The token file's tokens when there is one (ws:// too); else, unless `local_token` is
    off, the daemon's generated local token (the gRPC listener's own, or a new one when that
    listener needs none, e.g. under mTLS), published for the Codex port as well so the port
    in `environments.toml` finds it. wss:// without a token file is refused by the listener.
    """
    if config.token_file:
        return load_tokens(config.token_file), None
    if CodexListen.parse(url).tls or not config.local_token:
        return None, None
    token = running.local_token.token if running.local_token else LocalToken("execserver").token
    return (TokenEntry(LOCAL_CALLER, token.encode()),), LocalToken("execserver", token)


async def start_beside(running: RunningServer, config: ServerConfig, url: str) -> CodexWsServer:
    """The WebSocket listener over the running daemon's own process table."""
    assert running.host_info is not None
    ctx = CodexContext(config, running.table, running.host_info, os.environ)
    tokens, publish = codex_credentials(running, config, url)
    return await start_codex_ws(
        ctx, url, tokens=tokens, publish=publish, tls_cert=config.tls_cert_file,
        tls_key=config.tls_key_file, limits=config.codex_ws,
    )  # fmt: skip


async def run_stdio(config: ServerConfig) -> None:
    """One stdio session on its own table and backend (the configured one: local or SSH)."""
    backend, host = await build_backend(config)
    table = ProcessTable(backend, table_limits(config))
    try:
        await serve_stdio(CodexContext(config, table, host, os.environ))
    finally:
        await table.shutdown()
