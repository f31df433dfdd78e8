"""What one run of a command looks like from the client side."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

# Streams whose final event arrived, still receiving their trailing status.
_FINISHING: set[asyncio.Future[Any]] = set()


@dataclass
class RunTimes:
    """Seconds from sending the start request to the exit and to the last event; bytes seen."""

    exited: float
    closed: float
    nbytes: int
    exit_code: int | None = None


def finish_in_background(call: Any) -> None:
    """Let a stream whose last event was read receive its trailing status, uncancelled.

    Breaking out of the loop would drop the call and cancel it on the server; the status
    is protocol bookkeeping after the answer, so it is awaited off the timed path.
    """

    async def drain() -> None:
        with contextlib.suppress(Exception):
            await call.code()

    task = asyncio.ensure_future(drain())
    _FINISHING.add(task)
    task.add_done_callback(_FINISHING.discard)
