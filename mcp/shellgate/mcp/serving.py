"""Connect to the router, read Codex's tool specs for the turn, and run the chosen transport."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server
from shellgate.client.aio import AsyncClient
from shellgate.client.events import Decision
from shellgate.client.options import TlsOptions
from shellgate.client.turn import turn_context
from shellgate.mcp.front import FrontSettings, build_server
from shellgate.mcp.http import HttpFront, serve_http


async def _serve(
    *, target: str, tls: TlsOptions | None, token: str | None, http: HttpFront | None,
    print_port: bool, idle_timeout_s: float, cwd: str | None, approval_policy: str,
    fallback: Decision,
) -> None:  # fmt: skip
    async with AsyncClient(target, tls=tls, token=token) as client:
        environments = tuple(await client.list_environments())
        # Codex adds `environment_id` to exec_command only when the turn has a choice.
        # `cwd` names a directory of this machine: a remote environment starts in its own.
        choice = [(env.environment_id, "" if env.remote else cwd or "") for env in environments]
        turn = turn_context(
            environments=choice if len(choice) > 1 else None,
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
        await serve_http(server, http, print_port, idle_timeout_s)


def serve(**kwargs: object) -> int:
    """Run until the client closes stdio (or SIGINT/SIGTERM for HTTP); the exit code."""
    anyio.run(lambda: _serve(**kwargs))  # type: ignore[arg-type]
    return 0
