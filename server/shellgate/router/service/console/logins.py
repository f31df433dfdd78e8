"""Console logins: the server-side session table and the failed-login throttle.

A session id is 256 random bits sent once in a cookie; the table keys sessions by the id's
SHA-256, so a lookup compares digests (no timing hint about a stored id) and a memory dump
holds no usable cookie. Each session carries its own CSRF token and its page key: a second
256-bit secret the login hands only to the console's own page (which keeps it in
`sessionStorage`, per origin *including the port*), required as a header on every data
request. Cookies are not port-scoped — a service on another local port receives the cookie
— but never the key.

Failed logins are counted per claimed account (the operator name the login form names):
past the limit that account is refused for the window, whatever the token, and no other
account is affected — every local user shares the peer address 127.0.0.1, so a per-peer
count would let any of them lock every operator out. Across all accounts a second bound
only slows: past it logins take turns, one per `SLOW_LOGIN_S`, and a correct token still
gets in.
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
# Failed logins one account may have per window before it is refused for the window.
MAX_FAILURES_PER_ACCOUNT = 5
FAILURE_WINDOW_S = 60.0
# Accounts remembered by the throttle (the oldest is forgotten first).
MAX_THROTTLED_ACCOUNTS = 4_096
# Failed logins (all accounts) per window past which every login waits its turn.
GLOBAL_SLOW_AFTER = 20
# The turn: one login checked per this many seconds while slowed.
SLOW_LOGIN_S = 1.0


def _secret() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class ConsoleSession:
    """One logged-in operator."""

    subject: str
    csrf_token: str
    # Held only by the console's own pages; sent as the X-Shellgate-Console header.
    page_key: str

    def csrf_ok(self, presented: str) -> bool:
        """Constant-time check of a presented CSRF token."""
        return hmac.compare_digest(self.csrf_token.encode(), presented.encode())

    def key_ok(self, presented: str) -> bool:
        """Constant-time check of a presented page key."""
        return hmac.compare_digest(self.page_key.encode(), presented.encode())


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

    def create(self, subject: str) -> tuple[str, ConsoleSession]:
        """A new session for `subject`: its id (for the cookie) and the session."""
        self._expire()
        while len(self._table) >= self._max:
            self._table.popitem(last=False)
        session_id = _secret()
        session = ConsoleSession(subject, csrf_token=_secret(), page_key=_secret())
        self._table[_key(session_id)] = (session, self._clock())
        return session_id, session

    def get(self, session_id: str, *, touch: bool = True) -> ConsoleSession | None:
        """The live session of this id, or None; `touch` restarts its idle clock."""
        self._expire()
        key = _key(session_id)
        found = self._table.get(key)
        if found is None:
            return None
        if touch:
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
    """Failed logins in a sliding window: per account (refuses), in all (slows)."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        # The latest failures of all accounts: full and recent means "slowed".
        self._all: deque[float] = deque(maxlen=GLOBAL_SLOW_AFTER)

    def _recent(self, account: str) -> deque[float]:
        times = self._failures.get(account)
        if times is None:
            return deque()
        cutoff = self._clock() - FAILURE_WINDOW_S
        while times and times[0] <= cutoff:
            times.popleft()
        return times

    def refused(self, account: str) -> bool:
        """Whether this account used up its failed attempts for now."""
        return len(self._recent(account)) >= MAX_FAILURES_PER_ACCOUNT

    def slowed(self) -> bool:
        """Whether so many logins failed lately (all accounts) that logins take turns."""
        full = len(self._all) == GLOBAL_SLOW_AFTER
        return full and self._all[0] > self._clock() - FAILURE_WINDOW_S

    def failed(self, account: str) -> None:
        """Count one failed login naming `account`."""
        now = self._clock()
        self._all.append(now)
        times = self._recent(account)
        times.append(now)
        self._failures[account] = times
        self._failures.move_to_end(account)
        while len(self._failures) > MAX_THROTTLED_ACCOUNTS:
            self._failures.popitem(last=False)
