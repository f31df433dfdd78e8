"""Codex exec-server protocol over WebSocket: one JSON-RPC message per text frame, /readyz.

`ws://` only on loopback, anywhere else `wss://` with the daemon's TLS certificate. Either way
the upgrade needs `Authorization: Bearer` (the token file's tokens, else the daemon's local
token) and a Host and Origin of this listener; `door.py` decides that before any frame.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from shellgate.common.auth import TokenEntry
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.common.local_token import LocalToken
from shellgate.execserver.codex.door import Door, DoorConnection
from shellgate.execserver.codex.protocol import CodexContext, CodexSession
from shellgate.execserver.codex.wire import (
    PARSE_ERROR,
    Encoded,
    Message,
    RpcError,
    encode,
    error_response,
)
from shellgate.execserver.config import CodexWsLimits
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)
# Codex's own per-message ceiling.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


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


def _ssl_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(Path(cert), Path(key))
    return context


@dataclass
class CodexWsServer:
    """A running WebSocket listener; `port` is the bound one."""

    server: Server
    port: int
    door: Door
    # The local token's file published for this port (withdrawn at stop).
    published: LocalToken | None = field(default=None, repr=False)

    async def stop(self) -> None:
        """Close every connection (their sessions kill their processes) and stop listening."""
        self.server.close()
        await self.server.wait_closed()
        if self.published is not None:
            self.published.withdraw()


def _checked(
    listen: CodexListen, tokens: Sequence[TokenEntry] | None, tls: tuple[str, str]
) -> None:
    if not listen.tls and not is_loopback_host(listen.host):
        raise ValueError("codex-listen: ws:// is loopback only; use wss:// with --tls-cert")
    if listen.tls and tokens is None:
        raise ValueError("codex-listen: wss:// needs --token-file (bearer tokens)")
    if listen.tls and not all(tls):
        raise ValueError("codex-listen: wss:// needs --tls-cert and --tls-key")


async def start_codex_ws(
    ctx: CodexContext,
    url: str,
    *,
    tokens: Sequence[TokenEntry] | None,
    publish: LocalToken | None = None,
    tls_cert: str = "",
    tls_key: str = "",
    limits: CodexWsLimits | None = None,
) -> CodexWsServer:
    """Listen on `url` (ValueError for an unsafe or malformed one).

    `tokens` are the bearer tokens a connection must present; None (loopback `ws://` only)
    lets every local user in: the explicit opt-out. `publish`, when given, is written to the
    token file of the bound port (the generated local token, for `shellgate-execserver token`).
    """
    listen = CodexListen.parse(url)
    _checked(listen, tokens, (tls_cert, tls_key))
    limits = limits or CodexWsLimits()
    door = Door(tokens, limits, bind_host=listen.host, tls=listen.tls)

    async def handle(connection: ServerConnection) -> None:
        assert isinstance(connection, DoorConnection) and connection.caller

        async def send(message: Message | Encoded) -> None:
            # UTF-8 bytes sent as a text frame: no str round trip for big output chunks.
            await connection.send(encode(message), text=True)

        session = CodexSession(ctx, connection.caller, send)
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
        handle, listen.host, listen.port, process_request=door.process_request,
        create_connection=door.connection_class(), max_size=MAX_MESSAGE_BYTES,
        open_timeout=limits.handshake_timeout_ms / 1000,
        ssl=_ssl_context(tls_cert, tls_key) if listen.tls else None, compression=None,
    )  # fmt: skip
    port = int(next(iter(server.sockets)).getsockname()[1])
    door.bound(port)
    running = CodexWsServer(server, port, door)
    scheme = "wss" if listen.tls else "ws"
    log.info("codex exec-server protocol listening on %s://%s:%d", scheme, listen.host, port)
    if tokens is None:
        log.warning("codex listener: no token required (--no-local-token): every local user "
                    "can run commands as this user through it")  # fmt: skip
    if publish is not None:
        try:
            path = publish.publish(port)
        except OSError as exc:
            await running.stop()
            raise OSError(f"cannot write the codex listener's token file: {exc}") from exc
        running.published = publish
        log.info("codex callers authenticate with the token in %s "
                 "(shellgate-execserver token --port %d)", path, port)  # fmt: skip
    return running
