"""Concurrency caps that answer RESOURCE_EXHAUSTED quickly, shared fairly between subjects."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from shellgate.common.errors import LimitExceededError

__all__ = ["ACTIVE_SUBJECT_WINDOW_S", "Admission"]

# A subject that asked for a slot this recently counts as active for the fair share, so a
# newcomer still gets room after its first refusal while the busy subject's calls drain.
ACTIVE_SUBJECT_WINDOW_S = 10.0


@dataclass(eq=False)
class _Waiter:
    subject: str
    granted: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Admission:
    """`limit` slots; one subject holds at most its share while other subjects are active.

    A subject's share is `per_subject` when configured, otherwise `limit` divided by the
    subjects active now (holding a slot, or asking within ACTIVE_SUBJECT_WINDOW_S), at least
    one: alone, a subject may use every slot; once another subject asks, the first cannot
    refill past its share as its calls end, so the slots it frees go to the newcomer.
    Waiters are served in arrival order; a call that cannot get a slot within `wait_ms`
    gets RESOURCE_EXHAUSTED naming the limit that stopped it (never a bare cancellation).
    """

    def __init__(
        self,
        name: str,
        limit: int,
        wait_ms: int,
        *,
        limit_key: str,
        per_subject: int = 0,
        per_subject_key: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._name = name
        self._limit = max(1, limit)
        self._wait_s = wait_ms / 1000
        self._limit_key = limit_key
        self._per_subject = per_subject
        self._per_subject_key = per_subject_key
        self._clock = clock
        self._held: dict[str, int] = {}
        self._asked: dict[str, float] = {}
        self._waiters: deque[_Waiter] = deque()

    @property
    def in_use(self) -> int:
        """Slots held now."""
        return sum(self._held.values())

    def share(self, subject: str) -> int:
        """How many slots `subject` may hold now."""
        if self._per_subject > 0:
            return min(self._per_subject, self._limit)
        if not self._per_subject_key:
            return self._limit
        now = self._clock()
        for name, at in list(self._asked.items()):
            if now - at > ACTIVE_SUBJECT_WINDOW_S and not self._held.get(name):
                del self._asked[name]
        active = set(self._asked) | {s for s, n in self._held.items() if n}
        active.add(subject)
        return max(1, self._limit // len(active))

    def _blocked_by(self, subject: str) -> str | None:
        """The limit key that keeps `subject` from a slot now, or None."""
        if self.in_use >= self._limit:
            return self._limit_key
        if self._held.get(subject, 0) >= self.share(subject):
            return self._per_subject_key or self._limit_key
        return None

    @asynccontextmanager
    async def slot(self, subject: str = "") -> AsyncIterator[None]:
        """Hold one slot for the block; RESOURCE_EXHAUSTED after `wait_ms` without one."""
        self._asked[subject] = self._clock()
        blocked = self._blocked_by(subject)
        if blocked is None and not self._waiters:
            self._take(subject)
        else:
            await self._wait(subject, blocked)
        try:
            yield
        finally:
            self._release(subject)

    async def _wait(self, subject: str, blocked: str | None) -> None:
        waiter = _Waiter(subject)
        self._waiters.append(waiter)
        # Slots may be free while older waiters are held back by their share.
        self._dispatch()
        try:
            await asyncio.wait({waiter.granted}, timeout=self._wait_s)
        except BaseException:
            # The call went away while queued: give back a slot granted meanwhile.
            self._forget(waiter)
            raise
        if not waiter.granted.done():
            self._forget(waiter)
            key = self._blocked_by(subject) or blocked or self._limit_key
            raise LimitExceededError(self._refusal(subject, key), limit=key)

    def _forget(self, waiter: _Waiter) -> None:
        if waiter.granted.done():
            self._release(waiter.subject)
        else:
            waiter.granted.cancel()
            self._waiters.remove(waiter)

    def _refusal(self, subject: str, key: str) -> str:
        if key == self._limit_key:
            return (
                f"too many concurrent {self._name} calls ({key} = {self._limit}); retry later"
            )
        return (
            f"this caller holds {self._held.get(subject, 0)} of the {self._limit} "
            f"{self._name} slots, its share while other callers are active ({key}); "
            "retry later"
        )

    def _take(self, subject: str) -> None:
        self._held[subject] = self._held.get(subject, 0) + 1

    def _release(self, subject: str) -> None:
        left = self._held.get(subject, 0) - 1
        if left > 0:
            self._held[subject] = left
        else:
            self._held.pop(subject, None)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to the oldest waiters whose subject is within its share."""
        for waiter in list(self._waiters):
            if self.in_use >= self._limit:
                return
            if self._blocked_by(waiter.subject) is None:
                self._waiters.remove(waiter)
                self._take(waiter.subject)
                waiter.granted.set_result(None)
