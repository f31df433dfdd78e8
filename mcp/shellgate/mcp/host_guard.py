"""The HTTP front's `Host`/`Origin` check: the rule of every shellgate listener, as ASGI.

Every request's `Host` must name the address served — on loopback any spelling of loopback
(`127.x.y.z`, `[::1]`, `localhost`) on the front's own port, plus the `--http-host` names —
and a present `Origin` must be the front's own. Checked before authentication or any MCP
work: a DNS-rebinding page carries its own name in `Host` (421), a page of another site or
another local port its own origin (403). Non-browser clients send no `Origin`.

The rule is `shellgate.common.http_guard.HostGuard`'s. The SDK's own
`TransportSecuritySettings` (mcp 2.3) compares literal `host:port` strings or `host:*`
patterns, which cannot say "any 127.x.y.z, on this port only", so it is turned off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from shellgate.common.http_guard import HostGuard
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostCheck", "front_guard"]


def front_guard(bind_host: str, port: int, extra_names: Iterable[str] = ()) -> HostGuard:
    """The rule of a front bound to `bind_host:port`; `extra_names` from `--http-host`."""
    guard = HostGuard.serving(bind_host, port, extra_names=extra_names)
    # Plain HTTP and no WebSocket: only an `http://` page of this front is its own origin
    # (TLS, when there is any, is a reverse proxy's).
    return dataclasses.replace(guard, schemes=frozenset({"http"}))


class HostCheck:
    """ASGI middleware: 421 for a foreign `Host`, 403 for a foreign `Origin`, else `app`."""

    def __init__(self, app: ASGIApp, guard: HostGuard) -> None:
        self._app = app
        self._guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            hosts = [v.decode("latin-1") for n, v in scope.get("headers", ()) if n == b"host"]
            origin = dict(scope.get("headers", ())).get(b"origin")
            refusal = b""
            # One Host header, naming this front (two could disagree with what a proxy saw).
            if len(hosts) != 1 or not self._guard.host_allowed(hosts[0]):
                status, refusal = 421, b"unknown host: this server answers to its own address\n"
            elif not self._guard.origin_allowed(origin.decode("latin-1") if origin else None):
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
