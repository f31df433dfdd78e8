"""HTTP callers: bearer tokens from a file, each naming the subject that owns its threads.

The file has the router's token-file format (`shellgate.common.auth.load_tokens`,
docs/security.md): `subject token`, `subject sha256:<hex digest of the token>` or a bare
token (subject `token-N`, N its line). A `roles=` field parses as for the router and means
nothing here: the front has no operator surface.

Authentication goes through the SDK's own machinery (a `TokenVerifier` behind its bearer
backend): the SDK then binds each HTTP session to the token that opened it and each
2026-era `requestState` to the token that got it, and the front reads the subject with
`get_access_token()` to give each subject its own threads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from shellgate.common.auth import TokenEntry, load_tokens
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send


class TokenFileVerifier:
    """The SDK `TokenVerifier` of a token file: a known token's subject, else None."""

    def __init__(self, entries: Sequence[TokenEntry]) -> None:
        self._entries = tuple(entries)

    @classmethod
    def from_file(cls, path: str) -> TokenFileVerifier:
        """The verifier of a token file (ValueError naming the line when it is malformed)."""
        return cls(load_tokens(path))

    @classmethod
    def single(cls, subject: str, token: str) -> TokenFileVerifier:
        """The verifier of one token (the generated local one), naming `subject`."""
        return cls([TokenEntry(subject, token.encode())])

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token naming the subject of `token`, or None for an unknown one."""
        presented = token.strip().encode()
        digest = hashlib.sha256(presented).digest()
        subject = ""
        # Compare with every entry so the timing does not tell which one matched.
        for entry in self._entries:
            if entry.matches(presented, digest):
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
