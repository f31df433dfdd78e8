"""Codex exec-server protocol over WebSocket: one JSON-RPC message per text frame, /readyz.

`ws://` only on loopback (no auth, like Codex's own listener there); anywhere else `wss://`
with the daemon's TLS certificate and `Authorization: Bearer` checked against its token file.
"""

from __future__ import annotations

import http
import json
import logging
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from shellgate.common.auth import Authenticator, load_tokens
from shellgate.common.errors import UnauthenticatedError
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.execserver.codex.protocol import CodexContext, CodexSession
from shellgate.execserver.codex.wire import (
    PARSE_ERROR,
    Encoded,
    Message,
    RpcError,
    encode,
    error_response,
)
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

log = logging.getLogger(__name__)
# Codex's own per-message ceiling.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
LOCAL_CALLER = "codex-local"


@dataclass(frozen=True)
class CodexListen:
    """A parsed `--codex-listen` URL."""

    tls: bool
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> CodexListen:
        """`ws://IP:PORT` or `wss://HOST:PORT`; ValueError otherwise."""
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname or parts.port is None \
                or parts.path not in ("", "/"):  # fmt: skip
            raise ValueError(f"codex-listen: expected ws://IP:PORT or wss://HOST:PORT, got {url!r}")
        return cls(parts.scheme == "wss", parts.hostname, parts.port)


def _auth(listen: CodexListen, token_file: str) -> Authenticator | None:
    """The bearer check (None on loopback ws://); refuses an unsafe listener."""
    if not listen.tls:
        if not is_loopback_host(listen.host):
            raise ValueError("codex-listen: ws:// is loopback only; use wss:// with --tls-cert")
        return None
    if not token_file:
        raise ValueError("codex-listen: wss:// needs --token-file (bearer tokens)")
    return Authenticator(load_tokens(token_file), mtls=False)


def _ssl_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(Path(cert), Path(key))
    return context


def _caller(auth: Authenticator | None, headers: Headers) -> str:
    if auth is None:
        return LOCAL_CALLER
    return auth.authenticate({"authorization": headers.get("authorization", "")}, {})


@dataclass
class CodexWsServer:
    """A running WebSocket listener; `port` is the bound one."""

    server: Server
    port: int

    async def stop(self) -> None:
        """Close every connection (their sessions kill their processes) and stop listening."""
        self.server.close()
        await self.server.wait_closed()


async def start_codex_ws(
    ctx: CodexContext, url: str, *, token_file: str = "", tls_cert: str = "", tls_key: str = ""
) -> CodexWsServer:
    """Listen on `url` (ValueError for an unsafe or malformed one)."""
    listen = CodexListen.parse(url)
    auth = _auth(listen, token_file)
    if listen.tls and not (tls_cert and tls_key):
        raise ValueError("codex-listen: wss:// needs --tls-cert and --tls-key")

    def check(connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] == "/readyz":
            return connection.respond(http.HTTPStatus.OK, "ok\n")
        try:
            _caller(auth, request.headers)
        except UnauthenticatedError as exc:
            return connection.respond(http.HTTPStatus.UNAUTHORIZED, f"{exc.message}\n")
        return None

    async def handle(connection: ServerConnection) -> None:
        caller = _caller(auth, connection.request.headers if connection.request else Headers())

        async def send(message: Message | Encoded) -> None:
            # UTF-8 bytes sent as a text frame: no str round trip for big output chunks.
            await connection.send(encode(message), text=True)

        session = CodexSession(ctx, caller, send)
        try:
            async for frame in connection:
                try:
                    message = json.loads(frame)
                except ValueError:
                    await send(error_response(None, RpcError(PARSE_ERROR, "parse error")))
                    continue
                await session.receive(message)
        except ConnectionClosed:
            pass
        finally:
            await session.close()

    server = await serve(
        handle, listen.host, listen.port, process_request=check, max_size=MAX_MESSAGE_BYTES,
        ssl=_ssl_context(tls_cert, tls_key) if listen.tls else None, compression=None,
    )  # fmt: skip
    port = int(next(iter(server.sockets)).getsockname()[1])
    log.info("codex exec-server protocol listening on %s://%s:%d",
             "wss" if listen.tls else "ws", listen.host, port)  # fmt: skip
    return CodexWsServer(server, port)
