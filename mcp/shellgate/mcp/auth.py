"""HTTP callers: bearer tokens from a file, each naming the subject that owns its threads.

The file has the router's token-file format (docs/security.md): `subject token`,
`subject sha256:<hex digest of the token>` or a bare token (subject `token-N`, N its line).
The client package may not import `shellgate.common`, so the few lines of parsing live here.

Authentication goes through the SDK's own machinery (a `TokenVerifier` behind its bearer
backend): the SDK then binds each HTTP session to the token that opened it and each
2026-era `requestState` to the token that got it, and the front reads the subject with
`get_access_token()` to give each subject its own threads.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

_HASHED = "sha256:"


@dataclass(frozen=True)
class _Entry:
    subject: str
    secret: bytes  # the token, or its SHA-256 digest when `hashed`
    hashed: bool

    def __repr__(self) -> str:  # never let a token reach a log line
        return f"_Entry(subject={self.subject!r})"


def _entry(subject: str, value: str, where: str) -> _Entry:
    if not value.startswith(_HASHED):
        return _Entry(subject, value.encode(), hashed=False)
    try:
        digest = bytes.fromhex(value.removeprefix(_HASHED))
    except ValueError:
        digest = b""
    if len(digest) != hashlib.sha256().digest_size:
        raise ValueError(f"{where}: {_HASHED} must be followed by 64 hex digits")
    return _Entry(subject, digest, hashed=True)


class TokenFileVerifier:
    """The SDK `TokenVerifier` of a token file: a known token's subject, else None."""

    def __init__(self, path: str) -> None:
        entries: list[_Entry] = []
        for number, line in enumerate(Path(path).read_text().splitlines(), 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) > 2:
                raise ValueError(f"{path}:{number}: expected `subject token` or `token`")
            subject, value = parts if len(parts) == 2 else (f"token-{number}", parts[0])
            entries.append(_entry(subject, value, f"{path}:{number}"))
        if not entries:
            raise ValueError(f"{path}: no token")
        self._entries = tuple(entries)

    @classmethod
    def single(cls, subject: str, token: str) -> TokenFileVerifier:
        """The verifier of one token (the generated local one), naming `subject`."""
        verifier = cls.__new__(cls)
        verifier._entries = (_Entry(subject, token.encode(), hashed=False),)
        return verifier

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token naming the subject of `token`, or None for an unknown one."""
        presented = token.strip().encode()
        digest = hashlib.sha256(presented).digest()
        subject = ""
        # Compare with every entry so the timing does not tell which one matched.
        for entry in self._entries:
            if hmac.compare_digest(entry.secret, digest if entry.hashed else presented):
                subject = entry.subject
        if not subject:
            return None
        return AccessToken(token=token, client_id=subject, scopes=[], subject=subject)


class _HttpOnly:
    """Apply `gate` to HTTP requests only (the ASGI lifespan passes straight through)."""

    def __init__(self, app: ASGIApp, gate: ASGIApp) -> None:
        self._app = app
        self._gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self._gate if scope["type"] == "http" else self._app)(scope, receive, send)


def require_tokens(app: ASGIApp, verifier: TokenFileVerifier) -> ASGIApp:
    """`app` behind the SDK's bearer authentication: 401 without a known token."""
    gated = _HttpOnly(app, RequireAuthMiddleware(app, required_scopes=[]))
    return AuthenticationMiddleware(
        AuthContextMiddleware(gated), backend=BearerAuthBackend(verifier)
    )


def caller_subject() -> str | None:
    """The authenticated subject of the request being served (None: stdio, no token)."""
    token = get_access_token()
    return token.subject if token is not None else None
