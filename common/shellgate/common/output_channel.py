"""One bounded output channel: byte/chunk budget, back-pressure or counted drops, coalescing.

Every hop that queues process output between two tasks uses this type (the Execute
driver, the classic pump's pacing, the remote-process reader, the SSH channel readers),
so the bound, the drop accounting and the cancellation rules are written once. (The
exec-server's retention is not a queue but a replay log with many readers; its pacing
stays in `ManagedProcess._pace`.) Like trio's `open_memory_channel(max_buffer_size)`, it
is bounded by construction: choosing the bound is choosing how promptly back-pressure
reaches the producer.

One consumer (`receive`, or `async for`), any number of producers on the same loop:

* `send` waits for room: back-pressure. A `send` cancelled while it waits has queued
  nothing: the caller still owns the chunk, and the channel is unchanged.
* `send_nowait` never waits: without room the chunk is dropped and counted
  (`dropped_bytes`, `dropped_chunks`), so the caller can report exactly what was omitted.
* Empty items (markers, e.g. a start or end event carrying no bytes) are exempt from
  both bounds: they are never dropped and never wait.
* A chunk larger than the whole byte budget is admitted only into an empty channel, so it
  can never wait forever; the bound is then exceeded by that one chunk.
* Optional coalescing: a chunk with the same `key` as the newest queued entry, marked
  `contiguous`, is appended to it (up to `coalesce_bytes`); `receive` joins the parts.
* Optional pacing (`room`): a producer that cannot wait inside `send` (a synchronous
  callback feeds the channel) pauses while the backlog is at `pace_bytes`. With
  `pace_stall_s=None` it waits as long as the consumer takes (an attached reader never
  loses a byte; cancelling the producer or `abandon` ends the wait). With a number, a
  pause lasts at most that long; after such a stall pacing is suspended until the
  backlog drains below `pace_bytes`, so a consumer that stopped reading cannot hold the
  producer.
* `close` (producer side): queued entries are still delivered, then `receive` returns
  None; sending afterwards raises ChannelClosedError. `abandon` (consumer side): queued
  entries are discarded and every later send is dropped at once (counted), so a
  producer that must keep reading to reach an end marker never blocks.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = [
    "ChannelClosedError",
    "OutputChannel",
    "Received",
    "RoomCheck",
    "Sent",
    "pause_until",
]

M = TypeVar("M")

# `OutputChannel.room` as a producer receives it: an awaitable while it must pause (the
# wait is bounded by the channel), None when there is room.
RoomCheck = Callable[[], Awaitable[None] | None]


class ChannelClosedError(RuntimeError):
    """A send on a channel its producer side already closed (a bug in the caller)."""


class Sent(enum.Enum):
    """What became of one sent chunk."""

    # A new entry at the end of the queue.
    QUEUED = "queued"
    # Appended to the newest queued entry (coalesced): no new entry, the parts are joined.
    MERGED = "merged"
    # No room under the drop policy (or the consumer abandoned the channel): counted.
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True)
class Received(Generic[M]):
    """One entry taken by the consumer: the first chunk's metadata and all its bytes."""

    meta: M
    data: bytes
    # How many sends were merged into this entry (1 when nothing was coalesced).
    parts: int


class _Entry(Generic[M]):
    """A queued entry; mutable while it is the newest one (coalescing appends to it)."""

    __slots__ = ("key", "meta", "parts", "size")

    def __init__(self, meta: M, data: bytes, key: Hashable | None) -> None:
        self.meta = meta
        self.key = key
        self.parts = [data]
        self.size = len(data)


class OutputChannel(Generic[M]):
    """A single-consumer FIFO of byte chunks (with metadata `M`), bounded by bytes/chunks."""

    def __init__(
        self,
        *,
        max_bytes: int | None = None,
        max_chunks: int | None = None,
        coalesce_bytes: int = 0,
        pace_bytes: int | None = None,
        pace_stall_s: float | None = 0.5,
    ) -> None:
        if max_bytes is None and max_chunks is None:
            raise ValueError("an output channel needs max_bytes or max_chunks")
        if (max_bytes is not None and max_bytes < 1) or (max_chunks is not None and max_chunks < 1):
            raise ValueError("channel bounds must be positive")
        self._max_bytes = max_bytes
        self._max_chunks = max_chunks
        self._coalesce_bytes = coalesce_bytes
        self._pace_bytes = pace_bytes
        self._pace_stall_s = pace_stall_s
        self._entries: deque[_Entry[M]] = deque()
        # Bytes and data-carrying entries queued (markers count in neither).
        self._bytes = 0
        self._chunks = 0
        self._dropped_bytes = 0
        self._dropped_chunks = 0
        self._closed = False
        self._abandoned = False
        self._getter: asyncio.Future[None] | None = None
        self._putters: list[asyncio.Future[None]] = []
        # Pacing: set while the backlog is below pace_bytes; `_stalled` after a pause timed out.
        self._below_pace = asyncio.Event()
        self._below_pace.set()
        self._stalled = False

    # --- state -----------------------------------------------------------------------------

    @property
    def queued_bytes(self) -> int:
        """Bytes waiting for the consumer."""
        return self._bytes

    @property
    def queued_chunks(self) -> int:
        """Data-carrying entries waiting for the consumer (a merged entry counts once)."""
        return self._chunks

    @property
    def dropped_bytes(self) -> int:
        """Bytes dropped so far (no room under `send_nowait`, or abandoned)."""
        return self._dropped_bytes

    @property
    def dropped_chunks(self) -> int:
        """Chunks dropped so far."""
        return self._dropped_chunks

    @property
    def closed(self) -> bool:
        """The producer side closed (entries may still be queued)."""
        return self._closed

    # --- producer side ---------------------------------------------------------------------

    def _merges(self, size: int, key: Hashable | None, contiguous: bool) -> bool:
        if not (self._coalesce_bytes and size and key is not None and contiguous and self._entries):
            return False
        tail = self._entries[-1]
        return tail.key == key and tail.size > 0 and tail.size + size <= self._coalesce_bytes

    def _has_room(self, size: int, new_entry: bool) -> bool:
        if size == 0:
            return True
        # An empty channel admits any chunk, so an oversized one cannot wait forever.
        if self._max_bytes is not None and self._bytes and self._bytes + size > self._max_bytes:
            return False
        return not (new_entry and self._max_chunks is not None and self._chunks >= self._max_chunks)

    def _drop(self, size: int) -> Sent:
        self._dropped_bytes += size
        self._dropped_chunks += 1
        return Sent.DROPPED

    def _put(self, meta: M, data: bytes, key: Hashable | None, merge: bool) -> Sent:
        size = len(data)
        self._bytes += size
        if merge:
            tail = self._entries[-1]
            tail.parts.append(data)
            tail.size += size
            outcome = Sent.MERGED
        else:
            self._entries.append(_Entry(meta, data, key))
            if size:
                self._chunks += 1
            outcome = Sent.QUEUED
        if self._pace_bytes is not None and self._bytes >= self._pace_bytes:
            self._below_pace.clear()
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(None)
        return outcome

    def _check_open(self) -> None:
        if self._closed:
            raise ChannelClosedError("send on a closed output channel")

    def send_nowait(
        self, meta: M, data: bytes = b"", *, key: Hashable | None = None, contiguous: bool = True
    ) -> Sent:
        """Queue without waiting; without room the chunk is dropped and counted.

        `key` names what the chunk belongs to (e.g. a stream): only chunks with equal keys
        coalesce. `contiguous=False` says something was lost since the previous chunk of
        this key, so this one starts a new entry (later ones may still join it).
        """
        self._check_open()
        if self._abandoned:
            return self._drop(len(data))
        merge = self._merges(len(data), key, contiguous)
        if not self._has_room(len(data), new_entry=not merge):
            return self._drop(len(data))
        return self._put(meta, data, key, merge)

    async def send(
        self, meta: M, data: bytes = b"", *, key: Hashable | None = None, contiguous: bool = True
    ) -> Sent:
        """Queue, waiting for room (back-pressure); drops only once the consumer abandoned.

        Cancelled while waiting: nothing was queued and the channel is unchanged (the
        CancelledError propagates; the caller still owns the chunk).
        """
        while True:
            self._check_open()
            if self._abandoned:
                return self._drop(len(data))
            merge = self._merges(len(data), key, contiguous)
            if self._has_room(len(data), new_entry=not merge):
                return self._put(meta, data, key, merge)
            putter = asyncio.get_running_loop().create_future()
            self._putters.append(putter)
            try:
                await putter
            finally:
                # Woken or cancelled, this putter is done; every wake-up re-checks the room,
                # so a cancelled sender never swallows a wake-up another one needed.
                if putter in self._putters:
                    self._putters.remove(putter)

    def room(self) -> Awaitable[None] | None:
        """None while the backlog is below `pace_bytes` (or pacing is suspended after a stall);
        otherwise an awaitable that waits for the consumer (at most `pace_stall_s` unless None).

        Returning None instead of a finished awaitable keeps the common case allocation-free
        (it runs once per chunk). Cancelling the awaitable changes nothing in the channel.
        """
        if self._pace_bytes is None or self._stalled or self._bytes < self._pace_bytes:
            return None
        return self._wait_paced()

    async def _wait_paced(self) -> None:
        if self._pace_stall_s is None:
            await self._below_pace.wait()
            return
        try:
            await asyncio.wait_for(self._below_pace.wait(), self._pace_stall_s)
        except TimeoutError:
            # The consumer took nothing for a whole pause: stop holding the producer back
            # until the backlog drains (send_nowait drops past the budget meanwhile).
            self._stalled = True

    def close(self) -> None:
        """End of output: queued entries are still delivered, then `receive` returns None."""
        if self._closed:
            return
        self._closed = True
        self._wake_all()

    # --- consumer side ---------------------------------------------------------------------

    def abandon(self) -> None:
        """The consumer reads no more: queued and later chunks are dropped (counted), never waited."""
        self._abandoned = True
        while self._entries:
            entry = self._entries.popleft()
            if entry.size:
                self._drop(entry.size)
        self._bytes = self._chunks = 0
        self._wake_all()

    def _wake_all(self) -> None:
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(None)
        self._wake_putters()
        self._below_pace.set()

    def _wake_putters(self) -> None:
        putters, self._putters = self._putters, []
        for putter in putters:
            if not putter.done():
                putter.set_result(None)

    async def receive(self) -> Received[M] | None:
        """The oldest entry (coalesced parts joined), waiting for one; None once closed and empty.

        One consumer at a time. Cancelled while waiting: nothing was taken.
        """
        if self._getter is not None:
            raise RuntimeError("an output channel has one consumer")
        while not self._entries:
            if self._closed or self._abandoned:
                return None
            getter = asyncio.get_running_loop().create_future()
            self._getter = getter
            try:
                await getter
            finally:
                self._getter = None
        entry = self._entries.popleft()
        self._bytes -= entry.size
        if entry.size:
            self._chunks -= 1
        if self._putters:
            self._wake_putters()
        if self._pace_bytes is not None and self._bytes < self._pace_bytes:
            self._stalled = False
            self._below_pace.set()
        parts = entry.parts
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return Received(entry.meta, data, len(parts))

    async def __aiter__(self) -> AsyncIterator[Received[M]]:
        """Every entry until the channel is closed and drained."""
        while (item := await self.receive()) is not None:
            yield item


async def _wait(pause: Awaitable[None]) -> None:
    await pause


async def pause_until(pause: Awaitable[None], until: asyncio.Future[Any]) -> None:
    """Wait out a pacing pause from `room`, but no longer than until `until` is done.

    A producer paced by its consumer uses it to stop waiting at an event that makes the
    rest urgent (a process's exit: what remains must drain within a bounded grace).
    """
    waiter = asyncio.ensure_future(_wait(pause))
    try:
        await asyncio.wait({waiter, until}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        # Cancelling the pause changes nothing in the channel; reap it before returning.
        await asyncio.gather(waiter, return_exceptions=True)
