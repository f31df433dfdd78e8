"""One exponential backoff: the delays every retry loop of both daemons waits.

Reconnecting subscribers, store probes, webhook retries, circuit-breaker retries and idle
probes all wait a delay that starts at `initial`, multiplies by `factor` after each
failure up to `cap`, and starts over after a success. Written once so every loop is
bounded the same way (no jitter: each loop has one peer, not a thundering herd).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass
class Backoff:
    """Delays `initial`, `initial·factor`, … capped at `cap` (any unit); `reset` restarts."""

    initial: float
    cap: float
    factor: float = 2.0
    current: float = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.cap or self.factor < 1:
            raise ValueError("backoff needs 0 < initial <= cap and factor >= 1")
        self.current = self.initial

    def next(self) -> float:
        """The delay to wait now; the following one grows (up to the cap)."""
        delay = self.current
        self.current = min(self.current * self.factor, self.cap)
        return delay

    def reset(self) -> None:
        """A success: the next failure waits `initial` again."""
        self.current = self.initial
