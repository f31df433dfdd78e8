"""Seals on what grants, read back from Redis: a writer of Redis alone cannot forge them.

Whoever can write Redis (a sandboxed command that reached its socket, another tenant of
the server, a leaked password) could otherwise approve a parked call, add an "approved for
session" digest, a sticky grant or an amendment. Every such record is stored with an
HMAC-SHA256 over its purpose and every field that gives it meaning (thread, approval id,
the view it was decided on, the deciding operator…), keyed with `shared_state_key_file`:
a secret the replicas read from their own configuration and Redis never holds. A record
whose seal does not verify is refused (treated as absent, or as undecided) and reported
through `on_forged` (a warning and an audit record), so forgery and replay across threads or
approvals are visible. Hand-written over `hmac` (standard library): no library adds anything.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

from shellgate.common.config_schema import ConfigError

__all__ = ["MIN_KEY_BYTES", "RecordSeal", "digest", "load_seal_key"]

_log = logging.getLogger(__name__)
# 128 bits of key at least (`openssl rand -hex 32` gives 256).
MIN_KEY_BYTES = 16
_SEP = b"\x1f"


def load_seal_key(path: str) -> bytes:
    """The key in `path` (its first line, at least MIN_KEY_BYTES); ConfigError otherwise."""
    key_name = "shared_state_key_file"
    try:
        info = os.stat(path)
        text = Path(path).read_text().strip().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(key_name, f"cannot read: {exc}", got=path) from exc
    if info.st_mode & stat.S_IROTH:
        raise ConfigError(key_name, "readable by every user: chmod 600 (or 640)", got=path)
    key = text[0].strip().encode() if text else b""
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            key_name, f"needs at least {MIN_KEY_BYTES} bytes on its first line "
            "(e.g. `openssl rand -hex 32`)", got=path,
        )  # fmt: skip
    return key


class RecordSeal:
    """HMAC seals over (purpose, fields…); `on_forged` hears of every refused record."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self.on_forged: Callable[[str, dict[str, str]], None] = self._log_only
        self.refused = 0

    def __repr__(self) -> str:  # the key never reaches a log line
        return "RecordSeal(<key>)"

    def seal(self, purpose: str, *fields: str | bytes) -> str:
        """The hex seal of `fields` for `purpose` (length-prefixed: no field can shift)."""
        mac = hmac.new(self._key, purpose.encode(), hashlib.sha256)
        for value in fields:
            data = value.encode() if isinstance(value, str) else value
            mac.update(_SEP + str(len(data)).encode() + _SEP + data)
        return mac.hexdigest()

    def verify(self, seal: str | bytes | None, purpose: str, *fields: str | bytes) -> bool:
        """Whether `seal` is the seal of `fields` for `purpose` (constant time)."""
        if not seal:
            return False
        given = seal.decode(errors="replace") if isinstance(seal, bytes) else seal
        return hmac.compare_digest(given, self.seal(purpose, *fields))

    def forged(self, what: str, **where: str) -> None:
        """Report a refused record (`what`: its kind; `where`: thread, approval id…)."""
        self.refused += 1
        self.on_forged(what, where)

    @staticmethod
    def _log_only(what: str, where: dict[str, str]) -> None:
        _log.warning("refused a %s from the shared store: its seal does not verify %s",
                     what, where)  # fmt: skip


def digest(text: str | bytes) -> str:
    """A short stable stand-in for a long field (a view's JSON) inside a seal."""
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()
