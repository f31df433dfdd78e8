"""Caller authentication: bearer tokens from a file (constant-time compare), optional mTLS.

A token file line is `subject token`, `subject sha256:<hex digest of the token>` or a bare
token; a subject's line may end with `roles=operator` (comma-separated; `operator` is the
one role: it may list and decide operator-routed approvals, docs/approvals.md). A role
belongs to the subject: any of its tokens carries it. Hashed lines let an operator keep a file that, if leaked (it is readable wherever the
daemon runs), gives no usable token; `shellgate-execserver hash-token` prints the line.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from shellgate.common.errors import UnauthenticatedError

LOCAL_CALLER = "local"


_HASHED_PREFIX = "sha256:"
_ROLES_PREFIX = "roles="
# The roles a token-file line may grant.
KNOWN_ROLES = frozenset({"operator"})
OPERATOR_ROLE = "operator"


@dataclass(frozen=True)
class TokenEntry:
    """One accepted token (or its SHA-256 digest) and the caller subject it authenticates."""

    subject: str
    token: bytes
    hashed: bool = False
    roles: frozenset[str] = frozenset()

    def __repr__(self) -> str:  # never let a token reach a log line
        return f"TokenEntry(subject={self.subject!r}, token=<redacted>)"

    def matches(self, presented: bytes, presented_digest: bytes) -> bool:
        """Constant-time comparison with a presented token."""
        if self.hashed:
            return hmac.compare_digest(self.token, presented_digest)
        return hmac.compare_digest(self.token, presented)


def hashed_token_line(subject: str, token: str) -> str:
    """The token-file line that accepts `token` for `subject` without storing it."""
    return f"{subject} {_HASHED_PREFIX}{hashlib.sha256(token.encode()).hexdigest()}"


def _entry(subject: str, value: str, where: str) -> TokenEntry:
    if value.startswith(_HASHED_PREFIX):
        digest = value.removeprefix(_HASHED_PREFIX)
        try:
            raw = bytes.fromhex(digest)
        except ValueError:
            raw = b""
        if len(raw) != hashlib.sha256().digest_size:
            raise ValueError(f"{where}: {_HASHED_PREFIX} must be followed by 64 hex digits")
        return TokenEntry(subject, raw, hashed=True)
    return TokenEntry(subject, value.encode())


def _roles(value: str, where: str) -> frozenset[str]:
    if not value.startswith(_ROLES_PREFIX):
        raise ValueError(f"{where}: expected `subject token [roles=operator]` or `token`")
    roles = frozenset(value.removeprefix(_ROLES_PREFIX).split(","))
    unknown = sorted(roles - KNOWN_ROLES)
    if unknown:
        known = ", ".join(sorted(KNOWN_ROLES))
        raise ValueError(f"{where}: unknown role {unknown[0]!r} (known: {known})")
    return roles


def load_tokens(path: str) -> tuple[TokenEntry, ...]:
    """Parse a token file: `subject token [roles=…]` or `token` per line; `#` comments."""
    entries: list[TokenEntry] = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        where = f"{path}:{number}"
        if len(parts) == 1:
            entries.append(_entry(f"token-{number}", parts[0], where))
        elif len(parts) in (2, 3):
            entry = _entry(parts[0], parts[1], where)
            if len(parts) == 3:
                entry = replace(entry, roles=_roles(parts[2], where))
            entries.append(entry)
        else:
            raise ValueError(f"{where}: expected `subject token [roles=operator]` or `token`")
    if not entries:
        raise ValueError(f"{path}: no tokens")
    return tuple(entries)


class Authenticator:
    """Maps request metadata and the TLS peer to a caller subject, or refuses."""

    def __init__(
        self, tokens: Sequence[TokenEntry], mtls: bool, mtls_operators: Sequence[str] = ()
    ) -> None:
        self._tokens = tuple(tokens)
        self._mtls = mtls
        self._roles: dict[str, frozenset[str]] = {}
        for entry in self._tokens:
            self._roles[entry.subject] = self._roles.get(entry.subject, frozenset()) | entry.roles
        # mTLS identities have no token line: their roles come from the router config.
        self._mtls_operators = frozenset(mtls_operators)

    def roles(self, subject: str) -> frozenset[str]:
        """The roles of an authenticated subject (token-file roles, configured mTLS names)."""
        roles = self._roles.get(subject, frozenset())
        if self._mtls and not self._tokens and subject in self._mtls_operators:
            roles |= {OPERATOR_ROLE}
        return roles

    @property
    def subjects(self) -> tuple[str, ...]:
        """The subjects the token file names (no tokens)."""
        return tuple(dict.fromkeys(entry.subject for entry in self._tokens))

    @property
    def open(self) -> bool:
        """No tokens and no mTLS: every request is the local caller (nothing to read)."""
        return not self._tokens and not self._mtls

    def authenticate(
        self, metadata: Mapping[str, str], peer_identity: Mapping[str, Sequence[bytes]]
    ) -> str:
        """The caller subject for this request; raises UnauthenticatedError."""
        if self._tokens:
            header = metadata.get("authorization", "")
            scheme, _, presented = header.partition(" ")
            if scheme.lower() != "bearer" or not presented:
                raise UnauthenticatedError("missing bearer token")
            candidate = presented.strip().encode()
            digest = hashlib.sha256(candidate).digest()
            subject = ""
            # Compare against every entry so timing does not reveal which one matched.
            for entry in self._tokens:
                if entry.matches(candidate, digest):
                    subject = entry.subject
            if not subject:
                raise UnauthenticatedError("invalid bearer token")
            return subject
        if self._mtls:
            names = peer_identity.get("x509_common_name") or peer_identity.get(
                "x509_subject"
            )
            if not names:
                raise UnauthenticatedError("client certificate required")
            return names[0].decode(errors="replace")
        return LOCAL_CALLER
