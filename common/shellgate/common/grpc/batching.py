"""Opt-in coalescing of a server stream: events held for a short window, sent as one message.

A short command's stream is four or five messages (projection or started, output, the end
events); in grpc-aio each message is a write the loop awaits and a completion it is woken
for. A client that sets a `coalesce_ms` window gets the events that arrive within it in one
message instead: the first held event starts the window, and the held events leave when it
expires, when they reach MAX_HELD_BYTES, or at once when the producer says an event must
not wait (the end of the stream, an approval a person has to see). How events are joined
into one message is the caller's (`join`): the router's ExecuteBatch, the daemon's
StartResponse `more`. The producer is paced by the consumer as before: it waits while two
joined messages wait to be written.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

__all__ = ["MAX_COALESCE_MS", "MAX_HELD_BYTES", "coalesced"]

# Longest window a client may ask for: a longer one would read as a stalled stream.
MAX_COALESCE_MS = 1000
# Held events are sent once they reach this size. Coalescing is for short commands (a few
# small events); a flood's chunks pass one by one as without it: joining them into 1 MiB
# messages grew a router relaying a stalled remote flood by 10-20 MiB more (its
# tests/fault/test_remote_slow_consumer.py bound, 48 MiB, then failed under load).
MAX_HELD_BYTES = 64 * 1024
# Joined messages waiting to be written before the producer is held back.
_READY_MAX = 2


class _Batches:
    """Held events, joined messages ready to send, and the two sides' wake-ups."""

    def __init__(self, window_s: float, join: Callable[[list[bytes]], bytes]) -> None:
        self._window_s = window_s
        self._join = join
        self._loop = asyncio.get_running_loop()
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._ready: deque[bytes] = deque()
        self._reader: asyncio.Future[None] | None = None
        self._writer: asyncio.Future[None] | None = None
        self._done = False
        self._error: BaseException | None = None

    def add(self, message: bytes, now: bool) -> None:
        self._held.append(message)
        self._held_bytes += len(message)
        if now or self._held_bytes >= MAX_HELD_BYTES:
            self.flush()
        elif self._timer is None:
            self._timer = self._loop.call_later(self._window_s, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held:
            held, self._held, self._held_bytes = self._held, [], 0
            self._ready.append(held[0] if len(held) == 1 else self._join(held))
            _wake(self._reader)

    def finish(self, error: BaseException | None) -> None:
        self.flush()
        self._done, self._error = True, error
        _wake(self._reader)

    async def room(self) -> None:
        while len(self._ready) >= _READY_MAX:
            self._writer = self._loop.create_future()
            await self._writer

    async def next(self) -> bytes | None:
        while not self._ready:
            if self._done:
                if self._error is not None:
                    raise self._error
                return None
            self._reader = self._loop.create_future()
            await self._reader
        message = self._ready.popleft()
        _wake(self._writer)
        return message


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


async def coalesced(
    events: AsyncIterator[tuple[bytes, bool]],
    window_ms: int,
    join: Callable[[list[bytes]], bytes],
) -> AsyncIterator[bytes]:
    """The serialized messages of `events` ((message, send now) pairs), coalesced.

    A window of one event is sent as that event's own message. `events` runs in a task of
    its own (so the window can expire while it waits); an error there is raised here, and
    closing or cancelling this iterator cancels it.
    """
    batches = _Batches(min(window_ms, MAX_COALESCE_MS) / 1000, join)

    async def pump() -> None:
        try:
            async for message, now in events:
                batches.add(message, now)
                await batches.room()
        except asyncio.CancelledError:
            batches.finish(None)
            raise
        except BaseException as exc:  # handed to the consumer, which raises it
            batches.finish(exc)
        else:
            batches.finish(None)
        finally:
            # Cancelled while waiting for room, the producer sits at a `yield`: close it now
            # (its clean-up kills a call's process) rather than whenever it is collected.
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    task = asyncio.ensure_future(pump())
    try:
        while (message := await batches.next()) is not None:
            yield message
    finally:
        if not task.done():
            task.cancel()
        # The producer's clean-up (killing a call's process) finishes before the stream does.
        await asyncio.gather(task, return_exceptions=True)
