"""The `GET /metrics` endpoint both daemons serve: its own listener, bearer token or TLS.

Independent of the gRPC listener's `insecure` switch: a non-loopback metrics address needs
a bearer token file or a TLS certificate (checked by `check_metrics_listen`). The endpoint
reads one bounded request head and takes no body. On a loopback address, before anything
else, a request's `Host` and `Origin` must name this listener (`http_guard.HostGuard`:
421 / 403), so a DNS-rebinding page cannot read the endpoint from a browser. Any other
address has its token or TLS, which such a page cannot present, and names (DNS, wildcard
binds) this process does not know.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shellgate.common.grpc.listen import is_loopback_host
from shellgate.common.http_guard import HostGuard

__all__ = ["MetricsEndpoint", "check_metrics_listen", "start_metrics_server"]

# A request line plus headers larger than this is refused; the endpoint takes no body.
MAX_REQUEST_BYTES = 8 * 1024
READ_TIMEOUT_S = 5.0
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class MetricsEndpoint:
    """Where and how metrics are served (empty listen: not at all)."""

    listen: str = ""
    # A file whose first line is the bearer token scrapers must send; empty = none.
    token_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""

    @classmethod
    def of(cls, config: Any) -> MetricsEndpoint:
        """The endpoint a daemon config describes (`metrics_listen`, `metrics_token_file`,
        `metrics_tls_cert_file`, `metrics_tls_key_file`: the same keys in both daemons)."""
        return cls(
            config.metrics_listen, config.metrics_token_file, config.metrics_tls_cert_file,
            config.metrics_tls_key_file,
        )  # fmt: skip

    def token(self) -> bytes | None:
        """The bearer token (read at start), or None."""
        if not self.token_file:
            return None
        lines = Path(self.token_file).read_text().strip().splitlines()
        return lines[0].strip().encode() if lines else None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context when a certificate is configured."""
        if not (self.tls_cert_file and self.tls_key_file):
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context


def check_metrics_listen(endpoint: MetricsEndpoint) -> str | None:
    """Why this endpoint may not start (a non-loopback address with neither token nor TLS)."""
    if not endpoint.listen:
        return None
    host = endpoint.listen.rsplit(":", 1)[0]
    protected = endpoint.token_file or (endpoint.tls_cert_file and endpoint.tls_key_file)
    if is_loopback_host(host) or protected:
        return None
    return (
        f"metrics_listen {endpoint.listen} is not loopback: set metrics_token_file or "
        "metrics_tls_cert_file and metrics_tls_key_file"
    )


def _headers(head: bytes, wanted: bytes) -> list[str]:
    """Every value of header `wanted` (lowercase) in a request head."""
    values = []
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == wanted:
            values.append(value.strip().decode("latin-1"))
    return values


def _authorized(head: bytes, token: bytes | None) -> bool:
    if token is None:
        return True
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"authorization":
            scheme, _, given = value.strip().partition(b" ")
            return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)
    return False


def _refused(head: bytes, guard: HostGuard | None) -> bytes:
    """The status line refusing a request for another listener or origin (b"": none)."""
    if guard is None:
        return b""
    hosts, origins = _headers(head, b"host"), _headers(head, b"origin")
    if len(hosts) != 1 or not guard.host_allowed(hosts[0]):
        return b"421 Misdirected Request"
    if len(origins) > 1 or not guard.origin_allowed(origins[0] if origins else None):
        return b"403 Forbidden"
    return b""


@dataclass
class _Handler:
    """One listener's request handler; `guard` is set once the port is bound."""

    render: Callable[[], bytes]
    token: bytes | None
    guard: HostGuard | None = None

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _handle(reader, writer, self.render, self.token, self.guard)


async def _handle(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    render: Callable[[], bytes],
    token: bytes | None,
    guard: HostGuard | None,
) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
        writer.close()
        return
    request_line = head.split(b"\r\n", 1)[0].split()
    extra = b""
    if refused := _refused(head, guard):
        body, status, ctype = b"unknown host or foreign origin\n", refused, b"text/plain"
    elif len(request_line) < 2 or request_line[0] != b"GET" or request_line[1] != b"/metrics":
        body, status, ctype = b"not found\n", b"404 Not Found", b"text/plain"
    elif not _authorized(head, token):
        body, status, ctype = b"unauthorized\n", b"401 Unauthorized", b"text/plain"
        extra = b'WWW-Authenticate: Bearer realm="metrics"\r\n'
    else:
        body, status, ctype = render(), b"200 OK", CONTENT_TYPE
    writer.write(
        b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype + b"\r\n" + extra
        + b"Content-Length: " + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n" + body
    )  # fmt: skip
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def start_metrics_server(
    endpoint: MetricsEndpoint, render: Callable[[], bytes]
) -> asyncio.Server:
    """Serve `GET /metrics` on the endpoint (the caller ran `check_metrics_listen`)."""
    host, _, port = endpoint.listen.rpartition(":")
    handler = _Handler(render, endpoint.token())
    context = endpoint.ssl_context()
    server = await asyncio.start_server(
        handler,
        host.strip("[]"),
        int(port),
        limit=MAX_REQUEST_BYTES,
        ssl=context,
        start_serving=False,
    )
    if is_loopback_host(host):
        bound = server.sockets[0].getsockname()[1]
        handler.guard = HostGuard.serving(host, bound, tls=context is not None)
    # Serving only now: no request is answered before its guard is in place.
    await server.start_serving()
    return server
