"""What every step of `codex-check` shares: its one-line failure and its overall deadline."""

from __future__ import annotations

import time

# The Codex release whose exec-server protocol this daemon speaks (docs/codex.md); other
# versions are not known to work, so the check says so instead of passing by luck.
CODEX_VERSION = "0.169.0"


class CheckFailed(Exception):
    """A problem with the set-up, named in one line (exit 1)."""


class UsageError(Exception):
    """A command-line mistake of the check itself (exit 2)."""


class Deadline:
    """The check's whole time budget: each step waits at most what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def left(self, cap_s: float | None = None) -> float:
        """Seconds left (never below a small floor, so a last step still gets a try)."""
        left = max(self._end - time.monotonic(), 0.05)
        return left if cap_s is None else min(left, cap_s)

    def expired(self) -> bool:
        """Whether the budget is used up."""
        return time.monotonic() >= self._end
