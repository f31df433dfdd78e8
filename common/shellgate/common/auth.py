"""Caller authentication: bearer tokens from a file (constant-time compare), optional mTLS."""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from shellgate.common.errors import UnauthenticatedError

LOCAL_CALLER = "local"


@dataclass(frozen=True)
class TokenEntry:
    """One accepted token and the caller subject it authenticates."""

    subject: str
    token: bytes

    def __repr__(self) -> str:  # never let a token reach a log line
        return f"TokenEntry(subject={self.subject!r}, token=<redacted>)"


def load_tokens(path: str) -> tuple[TokenEntry, ...]:
    """Parse a token file: `subject token` or `token` per line; `#` comments."""
    entries: list[TokenEntry] = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) == 1:
            entries.append(TokenEntry(f"token-{number}", parts[0].encode()))
        elif len(parts) == 2:
            entries.append(TokenEntry(parts[0], parts[1].encode()))
        else:
            raise ValueError(f"{path}:{number}: expected `subject token` or `token`")
    if not entries:
        raise ValueError(f"{path}: no tokens")
    return tuple(entries)


class Authenticator:
    """Maps request metadata and the TLS peer to a caller subject, or refuses."""

    def __init__(self, tokens: Sequence[TokenEntry], mtls: bool) -> None:
        self._tokens = tuple(tokens)
        self._mtls = mtls

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
            subject = ""
            # Compare against every entry so timing does not reveal which one matched.
            for entry in self._tokens:
                if hmac.compare_digest(entry.token, candidate):
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
