"""Streamable HTTP hosting: the SDK's ASGI app behind the Host/Origin check and bearer tokens."""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from shellgate.client.mcp.auth import TokenFileVerifier, require_tokens
from shellgate.client.mcp.host_guard import FrontHosts, HostCheck
from shellgate.client.mcp.http_token import GeneratedToken
from starlette.types import ASGIApp

__all__ = ["MCP_PATH", "HttpFront", "is_loopback", "open_http", "serve_http"]

MCP_PATH = "/mcp"
# The subject of the generated token: the one local caller it stands for.
LOCAL_SUBJECT = "local"


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class HttpFront:
    """The bound listener, the names it answers to and the tokens it takes (None: open)."""

    sock: socket.socket
    hosts: FrontHosts
    tokens: TokenFileVerifier | None
    generated: GeneratedToken | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.sock.getsockname()[1])

    @property
    def token_path(self) -> Path | None:
        """The generated token's file (None with --http-token-file or --no-local-token)."""
        return self.generated.path if self.generated is not None else None

    def close(self) -> None:
        """Close the socket and remove the generated token's file."""
        self.sock.close()
        if self.generated is not None:
            self.generated.withdraw()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        # Listening from now on: a client that connects before uvicorn runs waits in the
        # backlog instead of being refused.
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def open_http(
    address: str, token_file: str | None, *, local_token: bool, names: Sequence[str] = ()
) -> HttpFront:
    """Bind `address` (HOST:PORT) and settle who may call: the token file, else (loopback,
    unless `local_token` is off) a generated token published for the bound port.

    Raises ValueError (a bad token file) or OSError (bind, token file) with the reason.
    """
    host, _, port = address.rpartition(":")
    tokens = TokenFileVerifier(token_file) if token_file else None
    sock = _bind(host, int(port))
    front = HttpFront(sock, FrontHosts.serving(host, int(sock.getsockname()[1]), names), tokens)
    if tokens is None and local_token and is_loopback(host):
        generated = GeneratedToken()
        try:
            generated.publish(front.port)
        except OSError as exc:
            sock.close()
            raise OSError(f"cannot write the bearer token file: {exc}") from exc
        front.generated = generated
        front.tokens = TokenFileVerifier.single(LOCAL_SUBJECT, generated.token)
    return front


async def serve_http(
    server: Server[Any], front: HttpFront, print_port: bool, idle_timeout_s: float
) -> None:
    """Serve `server` at http://host:port/mcp until cancelled (SIGINT/SIGTERM)."""
    # A dropped HTTP stream is no session end (the client may resume it): a session that
    # nobody DELETEs ends, with its processes, after `idle_timeout_s` without requests.
    # The SDK's own DNS-rebinding check is off: HostCheck below applies the full rule
    # (every loopback spelling, this port only) before anything else runs.
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        session_idle_timeout=idle_timeout_s,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    if front.tokens is not None:
        app = require_tokens(app, front.tokens)
    app = HostCheck(app, front.hosts)
    if print_port:
        print(front.port, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[front.sock])
    sys.stdout.flush()
