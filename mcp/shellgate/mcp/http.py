"""Streamable HTTP hosting: the SDK's ASGI app behind the Host/Origin check and bearer tokens."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.common.http_guard import HostGuard
from shellgate.common.local_token import LocalToken
from shellgate.mcp.auth import TokenFileVerifier, require_tokens
from shellgate.mcp.host_guard import HostCheck, front_guard
from shellgate.mcp.sessions import streamable_app
from starlette.types import ASGIApp

__all__ = ["MCP_PATH", "HttpFront", "open_http", "serve_http"]

MCP_PATH = "/mcp"
# The subject of the generated token: the one local caller it stands for.
LOCAL_SUBJECT = "local"
# Its file: `<runtime dir>/shellgate/mcp-<port>.token`, beside the router's generated ones.
TOKEN_DAEMON = "mcp"


@dataclass
class HttpFront:
    """The bound listener, the names it answers to and the tokens it takes (None: open)."""

    sock: socket.socket
    hosts: HostGuard
    tokens: TokenFileVerifier | None
    generated: LocalToken | None = None

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
    address: str, tokens: TokenFileVerifier | None, *, local_token: bool,
    names: Sequence[str] = (),
) -> HttpFront:  # fmt: skip
    """Bind `address` (HOST:PORT) and settle who may call: `tokens` (--http-token-file),
    else (loopback, unless `local_token` is off) a generated token published for the port.

    Raises OSError (bind, the generated token's file) with the reason.
    """
    host, _, port = address.rpartition(":")
    sock = _bind(host, int(port))
    front = HttpFront(sock, front_guard(host, int(sock.getsockname()[1]), names), tokens)
    if tokens is None and local_token and is_loopback_host(host):
        # Without it a loopback port would serve every local user, running commands as
        # this one: the router's rule (`shellgate serve`'s local token), its file format.
        generated = LocalToken(TOKEN_DAEMON)
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
    # A dropped HTTP stream is no session end: the client resumes it (Last-Event-ID, each
    # session's bounded event store). A session that nobody DELETEs ends, with its
    # processes, after `idle_timeout_s` without requests. The SDK's own DNS-rebinding
    # check is off: HostCheck below applies the full rule (every loopback spelling, this
    # port only) before anything else runs.
    app: ASGIApp = streamable_app(
        server, path=MCP_PATH, idle_timeout_s=idle_timeout_s,
        security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )  # fmt: skip
    if front.tokens is not None:
        app = require_tokens(app, front.tokens)
    app = HostCheck(app, front.hosts)
    if print_port:
        print(front.port, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[front.sock])
    sys.stdout.flush()
