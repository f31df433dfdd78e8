"""Who may open a Codex WebSocket, decided before the upgrade and before any frame is read.

Every connection passes, in order:

1. the connection caps, at accept: past `codex_ws.max_connections` open or
   `codex_ws.max_unauthenticated` not yet through the handshake, a 503 is written and the
   connection closed before anything is read from it;
2. on the request line and headers (the handshake timeout bounds the wait for them):
   `Host` and `Origin` (`shellgate.common.http_guard`, the rule of every browser-reachable
   listener): a foreign Host is 421, a foreign Origin 403;
3. `GET /readyz` answers 200 here (no token needed);
4. the bearer token (`Authorization: Bearer`, constant-time through `Authenticator`): 401.

Only then is the connection upgraded and its frames read (up to Codex's 64 MiB message). A
client that sends bytes after its request before the answer (RFC 6455 §4.1 says it waits)
is cut off, so an unauthenticated peer never has a frame buffered.
"""

from __future__ import annotations

import asyncio
import http
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.common.auth import Authenticator, TokenEntry
from shellgate.common.errors import UnauthenticatedError
from shellgate.common.http_guard import HostGuard
from shellgate.execserver.config import CodexWsLimits
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

log = logging.getLogger(__name__)
# The caller subject of connections with the daemon's generated local token, or with no
# token under the explicit opt-out: neither has a subject of its own.
LOCAL_CALLER = "codex-local"
_BUSY_BODY = b"too many connections\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)
# One log line per this many seconds while connections are refused (a flood stays one line).
_BUSY_LOG_EVERY_S = 10.0


def _one(headers: Headers, name: str) -> str | None:
    """A header sent at most once (None when absent); ValueError when repeated."""
    values = headers.get_all(name)
    if len(values) > 1:
        raise ValueError(f"{name} header repeated")
    return values[0] if values else None


@dataclass
class DoorCounts:
    """Connections admitted and still open, of those not yet answered, and refused ones."""

    open: int = 0
    unauthenticated: int = 0
    refused: int = 0
    refused_since_log: int = 0
    last_log: float = float("-inf")


class Door:
    """The checks above for one listener; `bound(port)` arms it once the port is known."""

    def __init__(
        self, tokens: Sequence[TokenEntry] | None, limits: CodexWsLimits, *, bind_host: str,
        tls: bool,
    ) -> None:  # fmt: skip
        # None: the explicit opt-out (`--no-local-token`): every local user may connect.
        self._auth = None if tokens is None else Authenticator(tokens, mtls=False)
        self._limits = limits
        self._bind_host = bind_host
        self._tls = tls
        self._guard: HostGuard | None = None
        self.counts = DoorCounts()

    def bound(self, port: int) -> None:
        """Arm the Host/Origin rule for the bound port."""
        self._guard = HostGuard.serving(
            self._bind_host, port, extra_names=self._limits.hosts, tls=self._tls
        )

    def admit(self) -> bool:
        """Count a new connection in, or refuse it (False) when a cap is reached."""
        counts = self.counts
        if counts.open < self._limits.max_connections \
                and counts.unauthenticated < self._limits.max_unauthenticated:  # fmt: skip
            counts.open += 1
            counts.unauthenticated += 1
            return True
        counts.refused += 1
        counts.refused_since_log += 1
        now = time.monotonic()
        if now - counts.last_log >= _BUSY_LOG_EVERY_S:
            log.warning(
                "codex listener: refused %d connection(s) with 503: %d open (codex_ws."
                "max_connections %d), %d not yet authenticated (codex_ws.max_unauthenticated %d)",
                counts.refused_since_log, counts.open, self._limits.max_connections,
                counts.unauthenticated, self._limits.max_unauthenticated,
            )  # fmt: skip
            counts.refused_since_log, counts.last_log = 0, now
        return False

    def decided(self, connection: DoorConnection) -> None:
        """The handshake of an admitted connection is answered: it no longer waits."""
        if connection.waiting:
            connection.waiting = False
            self.counts.unauthenticated -= 1

    def left(self, connection: DoorConnection) -> None:
        """An admitted connection closed."""
        self.decided(connection)
        self.counts.open -= 1

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """The handshake's answer: a refusal, /readyz, or None to upgrade (caller recorded)."""
        assert isinstance(connection, DoorConnection)
        try:
            return self._answer(connection, request)
        finally:
            self.decided(connection)

    def _answer(self, connection: DoorConnection, request: Request) -> Response | None:
        if self._guard is None:  # a connection in the instant before the port was known
            return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "starting\n")
        try:
            host, origin = _one(request.headers, "Host"), _one(request.headers, "Origin")
            authorization = _one(request.headers, "Authorization") or ""
        except ValueError as exc:
            return self._refuse(connection, http.HTTPStatus.BAD_REQUEST, str(exc))
        reason = self._guard.refusal(host, origin)
        if reason:
            status = (
                http.HTTPStatus.FORBIDDEN
                if self._guard.host_allowed(host)
                else http.HTTPStatus.MISDIRECTED_REQUEST
            )
            return self._refuse(connection, status, reason)
        if request.path.split("?", 1)[0] == "/readyz":
            return connection.respond(http.HTTPStatus.OK, "ok\n")
        if self._auth is None:
            connection.caller = LOCAL_CALLER
            return None
        try:
            connection.caller = self._auth.authenticate({"authorization": authorization}, {})
        except UnauthenticatedError as exc:
            return self._refuse(connection, http.HTTPStatus.UNAUTHORIZED, exc.message)
        return None

    def _refuse(self, connection: DoorConnection, status: http.HTTPStatus, reason: str) -> Response:
        peer = connection.remote_address
        log.info("codex listener: refused %s: %d %s", peer, status.value, reason)
        return connection.respond(status, f"{reason}\n")

    def connection_class(self) -> type[ServerConnection]:
        """The connection type `serve` builds: admitted at accept, held to the rule above."""
        door = self

        class _Connection(DoorConnection):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                super().connection_made(transport)
                if door.admit():
                    self.admitted = self.waiting = True
                    return
                assert isinstance(transport, asyncio.Transport)
                transport.write(_BUSY)
                transport.close()

            def data_received(self, data: bytes) -> None:
                if not self.admitted:
                    return  # refused: closing, nothing of it is parsed
                if self.waiting:
                    data = self.head_only(data)
                    if not data:
                        return
                super().data_received(data)

            def connection_lost(self, exc: Exception | None) -> None:
                if self.admitted:
                    self.admitted = False
                    door.left(self)
                super().connection_lost(exc)

        return _Connection


class DoorConnection(ServerConnection):
    """A server connection with what the door decided about it."""

    # Counted by the door (admitted at accept and not yet closed).
    admitted = False
    # Admitted and its handshake not yet answered.
    waiting = False
    # The authenticated caller subject ("" until the door lets it in).
    caller = ""
    # The request head's blank line was seen; the last bytes before it, while looking.
    _head_done = False
    _tail = b""

    def head_only(self, data: bytes) -> bytes:
        """What of `data` belongs to the request head; a byte past it cuts the connection.

        RFC 6455 §4.1: a client sends nothing after its request until the answer. One that
        does would have the parser buffer frames (up to 64 MiB) of a peer not yet
        authenticated, or have them run once it is: it is cut off instead, whether those
        bytes come in the request's own read or a later one.
        """
        if not self._head_done:
            seen = self._tail + data
            end = seen.find(b"\r\n\r\n")
            if end < 0:
                self._tail = seen[-3:]
                return data
            self._head_done = True
            cut = end + 4 - len(self._tail)
            if cut == len(data):
                return data
        self.transport.abort()
        return b""
