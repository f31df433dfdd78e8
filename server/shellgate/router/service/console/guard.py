"""The console's request guards: security headers, same-origin checks, the session cookie.

Pure ASGI (no BaseHTTPMiddleware) so the server-sent event streams pass through unbuffered.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SecurityHeaders", "allowed_hosts", "cookie_name", "host_name", "same_origin"]

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


def host_name(host_header: str) -> str:
    """The host part of a Host header, lowercased, without port (IPv6 brackets kept)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(listen: str, extra: tuple[str, ...]) -> frozenset[str]:
    """Host names the console answers to: its listen host, `localhost` on loopback, extras."""
    host = host_name(listen)
    names = {host, *(name.lower() for name in extra)}
    if host.startswith("127.") or host in ("[::1]", "localhost"):
        names |= {"localhost", "127.0.0.1", "[::1]"}
    return frozenset(names)


class SecurityHeaders:
    """Adds the console's security headers to every HTTP response; refuses unknown Hosts.

    A page on another site can point its own DNS name at 127.0.0.1 (DNS rebinding) and so
    reach a loopback console from the operator's browser as same-origin; such a request
    carries that other name in its Host header, so only the console's own names pass.
    """

    def __init__(self, app: ASGIApp, *, tls: bool, hosts: frozenset[str]) -> None:
        self.app = app
        self.headers = (*HEADERS, HSTS) if tls else HEADERS
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1")
        if host_name(host) not in self.hosts:
            await _refuse_host(send, self.headers)
            return
        names = {name for name, _ in self.headers}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message["headers"] = [*kept, *self.headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse_host(send: Send, headers: tuple[tuple[bytes, bytes], ...]) -> None:
    body = b"unknown host: add it to console_hosts\n"
    await send({
        "type": "http.response.start", "status": 421,
        "headers": [(b"content-type", b"text/plain"), *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def cookie_name(tls: bool) -> str:
    """The session cookie's name: `__Host-` bound (Secure, Path=/, no Domain) over TLS."""
    return "__Host-shellgate_console" if tls else "shellgate_console"


def same_origin(request: Request) -> bool:
    """Whether a state-changing request comes from the console's own pages.

    Browsers send `Sec-Fetch-Site` with every request; anything but `same-origin` (or
    `none`, typed by the user) is refused. `Origin` must name this console when it names
    anything: under `Referrer-Policy: no-referrer` Chromium sends `Origin: null` for form
    posts, which is accepted only when `Sec-Fetch-Site` vouched for the request. Non-browser
    clients send neither header; they still need the session's CSRF token, which only a
    logged-in page holds.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return site is not None
    host = request.headers.get("host", "")
    return origin == f"{request.url.scheme}://{host}"
