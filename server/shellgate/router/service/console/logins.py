"""Console logins: the server-side session table and the failed-login throttle.

A session id is 256 random bits sent once in a cookie; the table keys sessions by the id's
SHA-256, so a lookup compares digests (no timing hint about a stored id) and a memory dump
holds no usable cookie. Each session carries its own CSRF token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ConsoleSession", "LoginSessions", "LoginThrottle"]

Clock = Callable[[], float]
# Failed logins one peer may make per window before it is refused for the window.
MAX_FAILURES_PER_WINDOW = 5
FAILURE_WINDOW_S = 60.0
# Peers remembered by the throttle (the oldest is forgotten first).
MAX_THROTTLED_PEERS = 4_096


@dataclass(frozen=True)
class ConsoleSession:
    """One logged-in operator."""

    subject: str
    csrf_token: str

    def csrf_ok(self, presented: str) -> bool:
        """Constant-time check of a presented CSRF token."""
        return hmac.compare_digest(self.csrf_token.encode(), presented.encode())


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class LoginSessions:
    """Logged-in operators by session id: idle expiry and a cap (the least recent goes)."""

    def __init__(self, idle_s: float, max_sessions: int, clock: Clock = time.monotonic) -> None:
        self._idle_s = idle_s
        self._max = max_sessions
        self._clock = clock
        # digest of the session id -> (session, last use); least recently used first.
        self._table: OrderedDict[str, tuple[ConsoleSession, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._table)

    def create(self, subject: str) -> str:
        """A new session for `subject`; returns its id (for the cookie)."""
        self._expire()
        while len(self._table) >= self._max:
            self._table.popitem(last=False)
        session_id = secrets.token_urlsafe(32)
        session = ConsoleSession(subject, secrets.token_urlsafe(32))
        self._table[_key(session_id)] = (session, self._clock())
        return session_id

    def get(self, session_id: str) -> ConsoleSession | None:
        """The live session of this id (its idle clock restarts), or None."""
        self._expire()
        key = _key(session_id)
        found = self._table.get(key)
        if found is None:
            return None
        self._table[key] = (found[0], self._clock())
        self._table.move_to_end(key)
        return found[0]

    def end(self, session_id: str) -> None:
        """Log out."""
        self._table.pop(_key(session_id), None)

    def _expire(self) -> None:
        cutoff = self._clock() - self._idle_s
        while self._table:
            _key0, (_session, used) = next(iter(self._table.items()))
            if used > cutoff:
                break
            self._table.popitem(last=False)


class LoginThrottle:
    """Failed logins per peer in a sliding window; past the limit the peer is refused."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, peer: str) -> deque[float]:
        times = self._failures.get(peer)
        if times is None:
            return deque()
        cutoff = self._clock() - FAILURE_WINDOW_S
        while times and times[0] <= cutoff:
            times.popleft()
        return times

    def refused(self, peer: str) -> bool:
        """Whether this peer used up its failed attempts for now."""
        return len(self._recent(peer)) >= MAX_FAILURES_PER_WINDOW

    def failed(self, peer: str) -> None:
        """Count one failed login of `peer`."""
        times = self._recent(peer)
        times.append(self._clock())
        self._failures[peer] = times
        self._failures.move_to_end(peer)
        while len(self._failures) > MAX_THROTTLED_PEERS:
            self._failures.popitem(last=False)
