"""The console's request guards: security headers, Host/Origin, same-origin, the page key.

Pure ASGI (no BaseHTTPMiddleware) so the output streams pass through unbuffered.
"""

from __future__ import annotations

from shellgate.common.grpc.listen import split_listen
from shellgate.common.http_guard import HostGuard
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["KEY_HEADER", "SecurityHeaders", "console_guard", "cookie_name", "same_origin"]

# The header carrying the session's page key (logins.py) on every data request.
KEY_HEADER = "x-shellgate-console"
# No inline script or style, no framing, no referrer; pages are never cached.
HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        b"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
)
HSTS = (b"strict-transport-security", b"max-age=31536000")


def console_guard(listen: str, port: int, names: tuple[str, ...], tls: bool) -> HostGuard:
    """The Host/Origin rule of a console listening on `listen`, bound to `port`."""
    host, _ = split_listen(listen)
    return HostGuard.serving(host, port, extra_names=names, tls=tls)


class SecurityHeaders:
    """Adds the console's security headers to every HTTP response; refuses foreign requests.

    A page on another site can point its own DNS name at 127.0.0.1 (DNS rebinding) and so
    reach a loopback console from the operator's browser as same-origin; such a request
    carries that other name in its Host header (421). A page of another site or another
    local port that names itself in `Origin` is refused too (403); `Origin: null` is left
    to `same_origin` (Chromium sends it for the console's own form posts).
    """

    def __init__(self, app: ASGIApp, *, tls: bool, guard: HostGuard) -> None:
        self.app = app
        self.headers = (*HEADERS, HSTS) if tls else HEADERS
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers", ())
        hosts = [value.decode("latin-1") for name, value in raw if name == b"host"]
        origin = dict(raw).get(b"origin", b"").decode("latin-1") or None
        if len(hosts) != 1 or not self.guard.host_allowed(hosts[0]):
            await _refuse(send, self.headers, 421, b"unknown host: add it to console_hosts\n")
            return
        if origin not in (None, "null") and not self.guard.origin_allowed(origin):
            await _refuse(send, self.headers, 403, b"foreign origin refused\n")
            return
        names = {name for name, _ in self.headers}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message["headers"] = [*kept, *self.headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse(
    send: Send, headers: tuple[tuple[bytes, bytes], ...], status: int, body: bytes
) -> None:
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain"), *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def cookie_name(tls: bool) -> str:
    """The session cookie's name: `__Host-` bound (Secure, Path=/, no Domain) over TLS."""
    return "__Host-shellgate_console" if tls else "shellgate_console"


def same_origin(request: Request, guard: HostGuard) -> bool:
    """Whether a state-changing request comes from the console's own pages.

    Browsers send `Sec-Fetch-Site` with every request; anything but `same-origin` (or
    `none`, typed by the user) is refused. `Origin` must name this console when it names
    anything: under `Referrer-Policy: no-referrer` Chromium sends `Origin: null` for the
    console's own posts, which is accepted only when `Sec-Fetch-Site` vouched for the
    request. Non-browser clients send neither header; they still need the session's page
    key and CSRF token, which only a logged-in page holds.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return site is not None
    return guard.origin_allowed(origin)
