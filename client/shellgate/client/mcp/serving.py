"""Connect to the router, read Codex's tool specs for the turn, and run the chosen transport."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server
from shellgate.client.aio import AsyncClient
from shellgate.client.events import Decision
from shellgate.client.mcp.front import FrontSettings, build_server
from shellgate.client.mcp.http import serve_http
from shellgate.client.options import TlsOptions
from shellgate.client.turn import turn_context


async def _serve(
    *, target: str, tls: TlsOptions | None, token: str | None, http: str | None,
    http_token: str | None, print_port: bool, idle_timeout_s: float, cwd: str | None,
    approval_policy: str, fallback: Decision,
) -> None:  # fmt: skip
    async with AsyncClient(target, tls=tls, token=token) as client:
        environments = tuple(await client.list_environments())
        # Codex adds `environment_id` to exec_command only when the turn has a choice.
        ids = [env.environment_id for env in environments] if len(environments) > 1 else None
        turn = turn_context(
            environments=[(env_id, cwd or "") for env_id in ids] if ids else None,
            cwd=cwd, approval_policy=approval_policy, shell_tool_type="unified_exec",
        )  # fmt: skip
        specs = tuple(await client.list_tools(turn))
        settings = FrontSettings(
            turn=turn, specs=specs, environments=environments, fallback=fallback
        )
        server = build_server(client, settings)
        if http is None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        host, _, port = http.rpartition(":")
        await serve_http(server, host, int(port), http_token, print_port, idle_timeout_s)


def serve(**kwargs: object) -> int:
    """Run until the client closes stdio (or SIGINT/SIGTERM for HTTP); the exit code."""
    anyio.run(lambda: _serve(**kwargs))  # type: ignore[arg-type]
    return 0
