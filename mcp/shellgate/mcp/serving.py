"""Connect to the router, read Codex's tool specs for the turn, and run the chosen transport."""

from __future__ import annotations

import signal

import anyio
from mcp.server.stdio import stdio_server
from shellgate.client.aio import AsyncClient
from shellgate.client.events import Decision
from shellgate.client.options import TlsOptions
from shellgate.client.turn import turn_context
from shellgate.mcp.front import Front, FrontSettings, build_server
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
        front = Front(client, settings)
        server = build_server(front)
        if http is None:
            async with anyio.create_task_group() as group:
                group.start_soon(_end_threads_on_sigterm, front)
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
                group.cancel_scope.cancel()
            return
        await serve_http(server, http, print_port, idle_timeout_s)


async def _end_threads_on_sigterm(front: Front) -> None:
    # An MCP host stops a stdio server by closing its stdin, then SIGTERM (the SDK: 2 s
    # later). The default action would kill the front before it ends its threads, and their
    # sessions would outlive it; a cancel cannot unwind it either, as the SDK's stdin reader
    # blocks in a worker thread until a line or EOF. So: end every thread, then die of the
    # signal as asked (an embedded router follows by its parent-death signal).
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            break
    await front.end_all_threads()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.raise_signal(signal.SIGTERM)


def serve(**kwargs: object) -> int:
    """Run until the client closes stdio (or SIGINT/SIGTERM for HTTP); the exit code."""
    anyio.run(lambda: _serve(**kwargs))  # type: ignore[arg-type]
    return 0
