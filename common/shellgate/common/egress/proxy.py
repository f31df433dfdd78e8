"""The egress proxy: HTTP (with CONNECT) and SOCKS5 on one unix socket, outside the sandbox.

Why these libraries: PyPI's asyncio proxy servers (pproxy, proxy.py, mitmproxy) each bring
their own server loop, configuration and plugin model, and none lets a policy hook park a
request on an approval and answer it with Codex's texts, so the transport here is a thin
asyncio layer over two parsers: h11 (the well-kept sans-I/O HTTP/1.1 parser httpx and
uvicorn are built on) for requests and their framing, and `socks5` (a few dozen lines:
socksio, the maintained sans-I/O SOCKS library, implements the client side only, and
siosocks, which has a server side, was last released in 2022).

One proxy serves an environment (the router's for its local commands, a daemon's for its
own); each connection first names its route (`routes`), then speaks HTTP or SOCKS5 (told
apart by the first byte). Every request gets exactly one decision, recorded through the
observer: its host against the lists (or an approval), then, after DNS, the addresses it
resolved to; the connection goes to an address that was checked, never to a second lookup.
A refusal answers 403 with Codex's `x-proxy-error` and text (SOCKS5: "not allowed by
ruleset"), so a command's output says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import tempfile
from collections.abc import Sequence
from urllib.parse import urlsplit

import h11
from shellgate.common.egress import socks5
from shellgate.common.egress.policy import (
    Decision,
    Protocol,
    Reason,
    Verdict,
    blocked_header,
    blocked_message,
    normalize_host,
)
from shellgate.common.egress.routes import EgressEvent, EgressRequest, Observer, Route, RouteTable
from shellgate.common.local_token import ensure_runtime_dir

__all__ = ["EgressProxy"]

_log = logging.getLogger(__name__)
_ROUTE_LINE_MAX = 64
# How long a request's head may take to arrive, and a request body may stall; a decision
# (an operator's, up to its deadline) and an open tunnel have no such bound.
_HEAD_TIMEOUT_S = 30.0
_BODY_IDLE_S = 300.0
_CONNECT_TIMEOUT_S = 10.0
_CHUNK = 64 * 1024
_MAX_CONNECTIONS = 256
# Hop-by-hop headers a proxy must not forward (RFC 9110 §7.6.1), and its own.
_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te",
     b"trailer", b"upgrade"}
)  # fmt: skip


class _Refused(Exception):
    """A request the proxy answers itself (403 with the decision, or 502)."""

    def __init__(self, decision: Decision, request: EgressRequest) -> None:
        super().__init__(decision.reason.value)
        self.decision = decision
        self.request = request


def decision_text(decision: Decision, request: EgressRequest) -> str:
    """Codex's 403 body: the decision as one JSON line, then its sentence."""
    payload = {
        "decision": decision.verdict.value, "reason": decision.reason.value,
        "source": "baseline_policy", "protocol": request.protocol.value,
        "host": request.host, "port": request.port,
    }  # fmt: skip
    line = "CODEX_NETWORK_POLICY_DECISION " + json.dumps(payload, separators=(",", ":"))
    return f"{line}\n{blocked_message(decision.reason)}\n"


class EgressProxy:
    """One environment's proxy, started on demand on a unix socket in a private folder."""

    def __init__(self, observer: Observer | None = None, *, folder: str | None = None) -> None:
        self.routes = RouteTable()
        self._observer = observer
        self._folder = folder
        self._server: asyncio.AbstractServer | None = None
        self._server_task: asyncio.Task[None] | None = None
        self._path = ""
        self._slots = asyncio.Semaphore(_MAX_CONNECTIONS)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket_path(self) -> str:
        """Where the proxy listens ("" before it started)."""
        return self._path

    def listen(self) -> str:
        """Listen (once, from the event loop's thread); the socket's path.

        The socket listens before this returns, so a command spawned right after connects
        even before the serving task has run.
        """
        if self._server_task is None:
            # A folder only this user can enter, inside the runtime dir every sandbox masks:
            # no other user, and no sandboxed command (a governed one gets it read-only),
            # can reach, remove or replace the socket.
            base = str(ensure_runtime_dir())
            folder = self._folder or tempfile.mkdtemp(prefix="egress-", dir=base)
            os.chmod(folder, 0o700)
            path = os.path.join(folder, "proxy.sock")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(path)
            sock.listen(128)
            self._path = path
            self._server_task = asyncio.get_running_loop().create_task(
                self._run(sock), name="egress-proxy"
            )
        return self._path

    async def _run(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_unix_server(self._serve, sock=sock)
        await self._server.serve_forever()

    async def start(self) -> str:
        """Listen (once); the socket's path."""
        return self.listen()

    def add_route(self, route: Route) -> tuple[str, str]:
        """Listen if needed and register `route`: (socket path, route id)."""
        return self.listen(), self.routes.add(route)

    async def open_route(self, route: Route) -> tuple[str, str]:
        """`add_route` from a coroutine."""
        return self.add_route(route)

    async def aclose(self) -> None:
        """Stop listening and end every open connection."""
        if self._server is not None:
            self._server.close()
        if self._server_task is not None:
            self._server_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._server_task
            self._server_task = self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._path:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
                if self._folder is None:
                    os.rmdir(os.path.dirname(self._path))

    # --- one connection ----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            async with self._slots:
                await self._begin(reader, writer)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, h11.ProtocolError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:  # one connection's bug never stops the proxy
            _log.exception("egress proxy connection failed")
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _begin(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await asyncio.wait_for(reader.readuntil(b"\n"), _HEAD_TIMEOUT_S)
        if len(line) > _ROUTE_LINE_MAX:
            return
        route = self.routes.get(line.strip().decode("ascii", "replace"))
        if route is None:
            return
        first = await asyncio.wait_for(reader.readexactly(1), _HEAD_TIMEOUT_S)
        if first[0] == socks5.VERSION:
            upstream, both_ways = await self._socks(route, reader, writer, first), True
        else:
            upstream, both_ways = await self._http(route, reader, writer, first)
        if upstream is not None:
            # Past the head the bytes flow as long as both sides keep them flowing; after a
            # plain HTTP request only the answer does (a pipelined second request would be
            # one nobody checked).
            await _relay(reader, writer, *upstream, both_ways=both_ways)

    async def _decide(self, route: Route, request: EgressRequest) -> tuple[str, ...]:
        """The one decision for a request: the lists (or an approval), then the addresses.

        Returns the checked addresses to connect to; raises `_Refused` otherwise.
        """
        source = "policy"
        addresses: tuple[str, ...] = ()
        decision = route.policy.decide_host(request.host, request.method, request.protocol)
        if decision.verdict is Verdict.ASK:
            approved = route.ask is not None and await route.ask(request)
            source = "approval"
            decision = Decision(
                Verdict.ALLOW if approved else Verdict.DENY,
                Reason.APPROVED if approved else Reason.POLICY_DENIED,
            )
        if decision.allowed:
            addresses = await _resolve(request.host, request.port)
            checked = route.policy.decide_addresses(request.host, addresses)
            if not checked.allowed:
                decision, source = checked, "policy"
        if self._observer is not None:
            self._observer(EgressEvent(request, decision, source, route.labels))
        if not decision.allowed:
            raise _Refused(decision, request)
        return addresses

    async def _socks(
        self, route: Route, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        buf: bytes,
    ) -> _Upstream | None:  # fmt: skip
        try:
            while (greeting := socks5.parse_greeting(buf)) is None:
                more = await asyncio.wait_for(reader.read(512), _HEAD_TIMEOUT_S)
                if not more:
                    return None
                buf += more
            accepted, used = greeting
            writer.write(socks5.greeting_reply(accepted))
            if not accepted:
                return None
            buf = buf[used:]
            while (parsed := socks5.parse_request(buf)) is None:
                more = await asyncio.wait_for(reader.read(512), _HEAD_TIMEOUT_S)
                if not more:
                    return None
                buf += more
        except socks5.Socks5Error as exc:
            writer.write(socks5.reply(exc.reply))
            return None
        target, used = parsed
        request = EgressRequest(normalize_host(target.host), target.port, Protocol.SOCKS5_TCP, "")
        try:
            addresses = await self._decide(route, request)
        except _Refused as refused:
            code = (
                socks5.HOST_UNREACHABLE
                if refused.decision.reason is Reason.UNRESOLVED
                else (socks5.NOT_ALLOWED)
            )
            writer.write(socks5.reply(code))
            return None
        try:
            upstream = await _open(addresses, request.port)
        except OSError:
            writer.write(socks5.reply(socks5.CONNECTION_REFUSED))
            return None
        writer.write(socks5.reply(socks5.SUCCEEDED))
        if buf[used:]:
            upstream[1].write(buf[used:])
        return upstream

    async def _http(
        self, route: Route, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        first: bytes,
    ) -> tuple[_Upstream | None, bool]:  # fmt: skip
        """The upstream once the request is allowed, and whether the client keeps talking
        to it (a CONNECT tunnel) or only the answer flows (plain HTTP)."""
        conn = h11.Connection(h11.SERVER)
        conn.receive_data(first)
        event = await _next_event(conn, reader, _HEAD_TIMEOUT_S)
        if not isinstance(event, h11.Request):
            return None, False
        method = event.method.decode("ascii", "replace").upper()
        target = event.target.decode("ascii", "replace")
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            protocol, path = Protocol.HTTPS_CONNECT, ""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                _answer(writer, 400, "shellgate egress proxy: an absolute http:// URL is required "
                        "(https goes through CONNECT)\n")  # fmt: skip
                return None, False
            host, port_text = url.hostname, str(url.port or 80)
            protocol = Protocol.HTTP
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            _answer(writer, 400, "shellgate egress proxy: bad port\n")
            return None, False
        request = EgressRequest(normalize_host(host), int(port_text), protocol, method)
        try:
            addresses = await self._decide(route, request)
            upstream = await _open(addresses, request.port)
        except _Refused as refused:
            if refused.decision.reason is Reason.UNRESOLVED:
                _answer(writer, 502, f"shellgate egress proxy: could not resolve {host}\n")
            else:
                _refuse(writer, refused.decision, request)
            return None, False
        except OSError as exc:
            _answer(writer, 502, f"shellgate egress proxy: {host}:{port_text}: {exc}\n")
            return None, False
        if protocol is Protocol.HTTPS_CONNECT:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            # h11 stops at a CONNECT's head: what it holds past it is the tunnel's.
            rest = conn.trailing_data[0]
            if rest:
                upstream[1].write(rest)
            return upstream, True
        authority = f"{request.host}:{request.port}" if request.port != 80 else request.host
        await _forward(conn, reader, event, path, authority, upstream[1])
        return upstream, False


_Upstream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _resolve(host: str, port: int) -> tuple[str, ...]:
    """The addresses a name resolves to (a literal is its own); () when it does not."""
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        return (host,)
    except OSError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return ()
    return tuple(dict.fromkeys(str(info[4][0]) for info in infos))


async def _open(addresses: Sequence[str], port: int) -> _Upstream:
    """A connection to the first checked address that answers."""
    last = OSError("no address")
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, port), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            last = OSError(str(exc) or type(exc).__name__)
    raise last


async def _next_event(
    conn: h11.Connection, reader: asyncio.StreamReader, timeout_s: float
) -> object:
    """The next h11 event, reading as needed (each read within `timeout_s`)."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await asyncio.wait_for(reader.read(_CHUNK), timeout_s))


async def _forward(
    conn: h11.Connection, reader: asyncio.StreamReader, request: h11.Request, path: str,
    authority: str, upstream: asyncio.StreamWriter,
) -> None:  # fmt: skip
    """The request in origin form to the checked host (its `Host` header says so too: no
    other virtual host of that address), its body framed again, `Connection: close`."""
    headers = [(b"host", authority.encode("utf-8"))]
    headers += [(k, v) for k, v in request.headers if k.lower() not in (*_HOP, b"host")]
    headers.append((b"connection", b"close"))
    out = h11.Connection(h11.CLIENT)
    upstream.write(
        out.send(h11.Request(method=request.method, target=path, headers=headers)) or b""
    )
    while True:
        event = await _next_event(conn, reader, _BODY_IDLE_S)
        if isinstance(event, h11.Data):
            upstream.write(out.send(h11.Data(data=event.data)) or b"")
            await upstream.drain()
        elif isinstance(event, h11.EndOfMessage):
            upstream.write(out.send(h11.EndOfMessage()) or b"")
            return
        else:
            raise h11.RemoteProtocolError("request ended early")


def _answer(
    writer: asyncio.StreamWriter, status: int, body: str, extra: Sequence[tuple[str, str]] = ()
) -> None:
    data = body.encode()
    headers = [("content-type", "text/plain"), ("content-length", str(len(data))),
               ("connection", "close"), *extra]  # fmt: skip
    # Written by hand: a refusal may come before h11 has seen a whole request.
    head = f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    writer.write(head.encode() + data)


def _refuse(writer: asyncio.StreamWriter, decision: Decision, request: EgressRequest) -> None:
    _answer(writer, 403, decision_text(decision, request),
            [("x-proxy-error", blocked_header(decision.reason))])  # fmt: skip


_REASONS = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _relay(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, *, both_ways: bool,
) -> None:  # fmt: skip
    """Both directions until both ends are done (or only the answer)."""
    try:
        if both_ways:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        else:
            await _pump(up_reader, writer)
    except (ConnectionError, OSError):
        pass
    finally:
        up_writer.close()
