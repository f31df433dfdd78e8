"""The one way a test waits for something: poll a check until it holds, bounded.

`eventually(check, what)` calls `check()` every `interval_s` until it returns a truthy value
and returns that value; after `timeout_s` it raises AssertionError naming `what` and the
last result (`what` may be a callable, evaluated only then: "no X among <what was seen>"). `eventually_async` is the same for checks that are coroutine functions (or
plain callables) inside a running event loop. Exceptions listed in `ignoring` count as "not
yet" (e.g. OSError while a port is not listening); any other exception from the check
propagates at once (e.g. "the process died while we waited").

Never replace an event-driven wait (a future, a queue, a stream) with polling; use these only
where the thing awaited has no event to await.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_TIMEOUT_S", "eventually", "eventually_async"]

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_INTERVAL_S = 0.05


What = str | Callable[[], str]


def _timed_out(what: What, timeout_s: float, last: object, error: BaseException | None) -> str:
    detail = f"last error: {error!r}" if error is not None else f"last result: {last!r}"
    return f"not within {timeout_s:g} s: {what() if callable(what) else what} ({detail})"


def eventually(
    check: Callable[[], T],
    what: What,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Poll `check()` until it returns a truthy value (returned); AssertionError after
    `timeout_s` naming `what`. The check always runs at least once, and once more at the
    deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        error: BaseException | None = None
        value: T | None = None
        try:
            value = check()
        except ignoring as exc:
            error = exc
        else:
            if value:
                return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(what, timeout_s, value, error))
        time.sleep(interval_s)


async def eventually_async(
    check: Callable[[], T | Awaitable[T]],
    what: What,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """`eventually` for a running event loop: awaits the check's result when it is
    awaitable and sleeps with `asyncio.sleep`, so the loop keeps running meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        error: BaseException | None = None
        value: T | None = None
        try:
            result = check()
            value = await result if inspect.isawaitable(result) else result  # type: ignore[assignment]
        except ignoring as exc:
            error = exc
        else:
            if value:
                return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(what, timeout_s, value, error))
        await asyncio.sleep(interval_s)
