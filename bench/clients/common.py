"""What one run of a command looks like from the client side."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunTimes:
    """Seconds from sending the start request to the exit and to the last event; bytes seen."""

    exited: float
    closed: float
    nbytes: int
    exit_code: int | None = None
