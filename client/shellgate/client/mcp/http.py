"""Streamable HTTP hosting: the SDK's ASGI app behind its bearer authentication, on uvicorn."""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from shellgate.client.mcp.auth import TokenFileVerifier, require_tokens
from starlette.types import ASGIApp

MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def serve_http(
    server: Server[Any],
    host: str,
    port: int,
    tokens: TokenFileVerifier | None,
    print_port: bool,
    idle_timeout_s: float,
) -> None:
    """Serve `server` at http://host:port/mcp until cancelled (SIGINT/SIGTERM)."""
    # A dropped HTTP stream is no session end (the client may resume it): a session that
    # nobody DELETEs ends, with its processes, after `idle_timeout_s` without requests.
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, session_idle_timeout=idle_timeout_s
    )
    if tokens is not None:
        app = require_tokens(app, tokens)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    # Listening before the port is printed: a client that connects at once waits in the
    # backlog until uvicorn accepts, instead of being refused.
    sock.listen(128)
    if print_port:
        print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
    sys.stdout.flush()
