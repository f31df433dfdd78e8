"""Reachability of the shared store: a background probe, failure counts, one log per outage.

The store is a real dependency of a scaled router, so its state is visible: the probe PINGs
about once a second (and at most every `MAX_PROBE_INTERVAL_S` while it fails), every failed
store operation is counted by operation, and listeners hear every up/down change (the
health service, the metrics gauge). An outage is logged as one WARNING when it starts, a
summary WARNING every `LOG_EVERY_S` only while it lasts that long, and one INFO when it
ends, carrying the outage's summary (its length, how many operations failed, by
operation) — never a line per failed operation, never a traceback. While the store is down
operations fail fast (redis_link.RedisLink.run); the probe, or an operation that gets
through, brings it back up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from shellgate.common.backoff import Backoff

__all__ = ["PROBE_INTERVAL_S", "StoreMonitor"]

PROBE_INTERVAL_S = 1.0
# Short enough that every replica finds a restarted Redis within about a second.
MAX_PROBE_INTERVAL_S = 1.0
# While an outage lasts, a summary line at most this often (no log storm).
LOG_EVERY_S = 30.0
_log = logging.getLogger("shellgate.router.shared_state")

Listener = Callable[[bool], Awaitable[None]]


class StoreMonitor:
    """Up/down state of the shared store with counted, rate-limited failures."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.up = True
        self.errors: Counter[str] = Counter()
        self.resets = 0
        self.last_error = ""
        self._down_since = 0.0
        # When the store last came back (-inf: never down here).
        self.up_since = float("-inf")
        self._last_log = -LOG_EVERY_S
        self._suppressed = 0
        # Failures of the current outage by operation (the recovery line's summary).
        self._outage: Counter[str] = Counter()
        self._listeners: list[Listener] = []
        self._changed = asyncio.Event()

    def listen(self, listener: Listener) -> None:
        """Call `listener(up)` after every change (and once with the current state)."""
        self._listeners.append(listener)

    def failed(self, op: str, error: BaseException, *, keep_last: bool = False) -> None:
        """Count and log one failed operation; the store is down from now on."""
        op = op.replace(" ", "_")
        self.errors[op] += 1
        self._outage[op] += 1
        if not keep_last or not self.last_error:
            self.last_error = f"{type(error).__name__}: {error}"
        now = self._clock()
        if self.up:
            self.up = False
            self._down_since = now
            self._changed.set()
            self._last_log = now
            self._suppressed = 0
            self._outage = Counter({op: 1})
            _log.warning(
                "shared state unreachable (%s failed: %s); calls that need shared state "
                "answer UNAVAILABLE until it returns, local calls keep working",
                op, self.last_error,
            )  # fmt: skip
            return
        self._suppressed += 1
        if now - self._last_log >= LOG_EVERY_S:
            _log.warning(
                "shared state still unreachable after %.0f s (%d failures since the last "
                "report; last: %s failed: %s)",
                now - self._down_since, self._suppressed, op, self.last_error,
            )  # fmt: skip
            self._last_log = now
            self._suppressed = 0

    def refused(self, op: str) -> None:
        """Count an operation refused without trying because the store is down."""
        self.failed(op, ConnectionError("not tried: the store is down"), keep_last=True)

    def succeeded(self) -> None:
        """An operation got through: the store is up."""
        if not self.up:
            self.up = True
            self.up_since = self._clock()
            self._changed.set()
            summary = ", ".join(f"{op} {n}" for op, n in sorted(self._outage.items()))
            _log.info(
                "shared state reachable again after %.1f s (%d operations failed or were "
                "refused meanwhile: %s)",
                self._clock() - self._down_since, sum(self._outage.values()), summary,
            )  # fmt: skip
            self._outage = Counter()

    def recovered_within(self, seconds: float) -> bool:
        """Up, and back from an outage for less than `seconds`."""
        return self.up and self._clock() - self.up_since < seconds

    def data_lost(self) -> None:
        """Count a detected loss of the store's data (a restart without persistence)."""
        self.resets += 1
        _log.warning(
            "shared state lost its data (the epoch marker vanished: a Redis restart without "
            "AOF, or a flush); approvals, grants, parked-call records and remote session "
            "records are gone; this replica re-publishes its threads and the sessions it knows"
        )

    async def notify(self) -> None:
        """Tell every listener the current state (after a change)."""
        self._changed.clear()
        for listener in self._listeners:
            await listener(self.up)

    async def run(self, probe: Callable[[], Awaitable[None]], stop: asyncio.Event) -> None:
        """Probe until `stop`: every `PROBE_INTERVAL_S`, backing off while the store is down."""
        await self.notify()
        backoff = Backoff(PROBE_INTERVAL_S, MAX_PROBE_INTERVAL_S)
        while not stop.is_set():
            try:
                await probe()
            except Exception as exc:  # the probe reports through failed(); keep probing
                if self.up:
                    self.failed("probe", exc)
            if self._changed.is_set():
                await self.notify()
            if self.up:
                backoff.reset()
            interval = backoff.next()
            waiter = asyncio.ensure_future(stop.wait())
            changed = asyncio.ensure_future(self._changed.wait())
            try:
                # An operation failing between probes reports at once, not at the next probe.
                await asyncio.wait({waiter, changed}, timeout=interval,
                                   return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            finally:
                for task in (waiter, changed):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if self._changed.is_set():
                await self.notify()
