"""The HTTP front's `Host`/`Origin` rule: `shellgate.common.http_guard.HostGuard`, mirrored.

Every request's `Host` must name the address served — on loopback any spelling of loopback
(`127.x.y.z`, `[::1]`, `localhost`) on the front's own port, plus the `--http-host` names —
and a present `Origin` must be the front's own. Checked before authentication or any MCP
work: a DNS-rebinding page carries its own name in `Host` (421), a page of another site or
another local port its own origin (403). Non-browser clients send no `Origin`.

Why a copy and not the shared rule: the client package may not import `shellgate.common`
(the layering rule, tests/unit/test_architecture.py), and the SDK's own
`TransportSecuritySettings` (mcp 2.3) compares literal `host:port` strings or `host:*`
patterns, which cannot say "any 127.x.y.z, on this port only". tests/unit/test_mcp_host_guard.py
checks that this copy answers like `HostGuard` on the shared rule's cases.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["FrontHosts", "HostCheck"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _canonical(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare


def _split_host(value: str) -> tuple[str, int | None]:
    """(canonical host, port or None) of a `Host` header; ("", None) when malformed."""
    value = value.strip()
    if not value or any(c in value for c in "/@?# \t"):
        return "", None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return "", None
        host, rest = value[: end + 1], value[end + 1 :]
    elif value.count(":") > 1:
        return "", None  # IPv6 must be bracketed in a Host header
    else:
        host, sep, port = value.partition(":")
        rest = f":{port}" if sep else ""
    if not rest:
        return _canonical(host), None
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return "", None
    return _canonical(host), int(rest[1:])


@dataclass(frozen=True)
class FrontHosts:
    """The names and port the HTTP front answers to (plain HTTP: TLS is a proxy's job)."""

    port: int
    names: frozenset[str]
    loopback: bool

    @classmethod
    def serving(cls, bind_host: str, port: int, extra_names: Iterable[str] = ()) -> FrontHosts:
        """The rule of a front bound to `bind_host:port`; `extra_names` from `--http-host`."""
        names = {_canonical(bind_host), *(_canonical(n) for n in extra_names if n)}
        return cls(port, frozenset(n for n in names if n), _loopback(_canonical(bind_host)))

    def _name_ok(self, host: str) -> bool:
        return host in self.names or (self.loopback and _loopback(host))

    def _port_ok(self, port: int | None) -> bool:
        return (80 if port is None else port) == self.port

    def host_allowed(self, value: str | None) -> bool:
        """Whether a `Host` header names this front (a missing one is refused)."""
        host, port = _split_host(value or "")
        return bool(host) and self._name_ok(host) and self._port_ok(port)

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether an `Origin` is this front's own (absent: a non-browser client)."""
        if origin is None:
            return True
        try:
            parts = urlsplit(origin.strip())
            port = parts.port
        except ValueError:
            return False
        if parts.scheme != "http" or not parts.hostname or parts.path:
            return False
        return self._name_ok(_canonical(parts.hostname)) and self._port_ok(port)


class HostCheck:
    """ASGI middleware: 421 for a foreign `Host`, 403 for a foreign `Origin`, else `app`."""

    def __init__(self, app: ASGIApp, hosts: FrontHosts) -> None:
        self._app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            hosts = [v.decode("latin-1") for n, v in scope.get("headers", ()) if n == b"host"]
            origin = dict(scope.get("headers", ())).get(b"origin")
            refusal = b""
            # One Host header, naming this front (two could disagree with what a proxy saw).
            if len(hosts) != 1 or not self._hosts.host_allowed(hosts[0]):
                status, refusal = 421, b"unknown host: this server answers to its own address\n"
            elif not self._hosts.origin_allowed(origin.decode("latin-1") if origin else None):
                status, refusal = 403, b"foreign origin refused\n"
            if refusal:
                await send({
                    "type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"),
                                (b"content-length", str(len(refusal)).encode())],
                })  # fmt: skip
                await send({"type": "http.response.body", "body": refusal})
                return
        await self._app(scope, receive, send)
