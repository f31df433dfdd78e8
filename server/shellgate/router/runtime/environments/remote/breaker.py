"""A per-daemon circuit breaker: after a failed connect, calls fail fast until a retry works.

Without it every call to a dead daemon waits the whole connect timeout (gRPC keeps
retrying a refused connection until `channel_ready` times out). Once a connect has
failed the circuit is *open*: callers get the unavailable error at once, with the reason
and when the next retry is due, while one background retry (owned by the environment)
reconnects with exponential backoff. A successful retry — or any later successful connect
or health check — closes the circuit. No tool call ever makes the retry itself, so no call
waits the connect timeout twice in a row for a daemon that stays dead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from shellgate.common.backoff import Backoff

__all__ = ["BreakerSettings", "CircuitBreaker"]


@dataclass(frozen=True)
class BreakerSettings:
    """Backoff between background reconnects (ms): first delay, doubling up to the cap."""

    initial_backoff_ms: int = 500
    max_backoff_ms: int = 30_000


class CircuitBreaker:
    """Open/closed state, the reason it opened and the backoff of the next retry."""

    def __init__(
        self, settings: BreakerSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._clock = clock
        self.reason: str | None = None
        self._backoff = Backoff(settings.initial_backoff_ms, settings.max_backoff_ms)
        self._retry_at = 0.0
        # How often the circuit opened, and how many calls it refused (metrics).
        self.opened_total = 0
        self.refused_total = 0

    @property
    def open(self) -> bool:
        """Whether calls fail fast now."""
        return self.reason is not None

    def trip(self, reason: str) -> None:
        """Open (or keep open) with `reason`; the next retry waits the current backoff."""
        if self.reason is None:
            self.opened_total += 1
            self._backoff.reset()
        self.reason = reason
        self._retry_at = self._clock() + self._backoff.current / 1000

    def retry_delay_s(self) -> float:
        """Seconds until the background retry is due (0 when due now)."""
        return max(self._retry_at - self._clock(), 0.0)

    def retry_failed(self, reason: str) -> None:
        """A background retry failed: stay open, back off further."""
        self._backoff.next()
        self.reason = reason
        self._retry_at = self._clock() + self._backoff.current / 1000

    def close(self) -> None:
        """The daemon answered: calls go through again."""
        self.reason = None
        self._backoff.reset()

    def refusal(self) -> str:
        """The reason a refused call reports (counted as one refusal)."""
        self.refused_total += 1
        return self.describe()

    def describe(self) -> str:
        """Why the circuit is open and when the next reconnect is due."""
        return (
            f"{self.reason} (circuit open: failing fast; next reconnect attempt in "
            f"{self.retry_delay_s():.1f} s)"
        )
