"""A bounded in-memory event store per HTTP session: what makes a dropped stream resumable.

Streamable HTTP (2025-11-25) numbers every SSE event of a response stream (`id:`), opens
each stream with an empty priming event and a `retry:` hint, and lets a client whose stream
dropped reconnect with `GET` + `Last-Event-ID` to get what it missed, the call's result
included. The SDK does the numbering, priming and replay once it has an `EventStore`;
mcp 2.3 ships none, so this is one, kept small:

- one store per MCP session (`sessions.ResumableSessions`), dropped when the session ends:
  request ids repeat across sessions (every client counts from 0), so a shared store would
  replay one session's events into another's stream;
- per stream at most `MAX_STREAM_EVENTS` events and `MAX_STREAM_BYTES` of JSON (older
  events go first; the newest always stays), per session at most `MAX_SESSION_STREAMS`
  streams (the oldest goes), and all sessions together `MAX_TOTAL_BYTES` (every session's
  oldest streams go first). A response larger than `MAX_STREAM_BYTES` is kept as a small
  JSON-RPC error saying so: a resumed client gets an answer, never a stream that waits for
  an event nobody kept.

Event ids are `<stream>-<seq>`, both counters of this session: a store only ever replays
its own session's events (the SDK routes a session's requests by its id and checks that the
token presenting it is the one that opened it).
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import mcp.types as types
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

__all__ = ["EventBudget", "SessionEvents"]

logger = logging.getLogger(__name__)

# The SDK client refuses an SSE event over 1 MiB (DEFAULT_MAX_SSE_EVENT_SIZE): a stream
# keeps no more than one such event's worth.
MAX_STREAM_BYTES = 1024 * 1024
MAX_STREAM_EVENTS = 256
MAX_SESSION_STREAMS = 32
MAX_TOTAL_BYTES = 64 * 1024 * 1024
# What an event costs beyond its JSON (its deque slot, tuple and bytes header), counted in
# every bound so that many tiny events are bounded too.
EVENT_OVERHEAD_BYTES = 128
# The `retry:` of every priming event: how long a client waits before it reconnects.
RETRY_MS = 1000


@dataclass(eq=False)
class _Stream:
    """One response stream's retained events: (seq, JSON), b"" for the priming event."""

    stream_id: StreamId
    number: int
    owner: SessionEvents
    events: deque[tuple[int, bytes]] = field(default_factory=deque)
    size: int = 0  # counted bytes: JSON plus EVENT_OVERHEAD_BYTES per event

    def push(self, seq: int, data: bytes) -> int:
        """Append an event; the counted bytes it adds."""
        self.events.append((seq, data))
        cost = len(data) + EVENT_OVERHEAD_BYTES
        self.size += cost
        return cost

    def pop_oldest(self) -> int:
        """Remove the oldest event; the counted bytes it frees."""
        _, data = self.events.popleft()
        cost = len(data) + EVENT_OVERHEAD_BYTES
        self.size -= cost
        return cost


def _kept(message: types.JSONRPCMessage) -> bytes | None:
    """The JSON to retain for `message` (None: too large, and not the stream's answer)."""
    data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    if len(data) <= MAX_STREAM_BYTES:
        return data
    if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        return None
    # The answer itself must survive in some form, or a resumed stream would wait forever.
    error = types.ErrorData(
        code=types.INTERNAL_ERROR,
        message=f"the result ({len(data)} bytes) is larger than a resumable stream keeps "
        f"({MAX_STREAM_BYTES} bytes): run the call again",
    )
    substitute = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
    return substitute.model_dump_json(by_alias=True, exclude_unset=True).encode()


class EventBudget:
    """All sessions' retained events, bounded together: the oldest streams go first."""

    def __init__(self, max_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        # Every session's streams, oldest first.
        self._streams: OrderedDict[_Stream, None] = OrderedDict()

    def session(self) -> SessionEvents:
        """A new session's store, drawing on this budget."""
        return SessionEvents(self)

    def track(self, stream: _Stream) -> None:
        """Count a new stream."""
        self._streams[stream] = None

    def forget(self, stream: _Stream) -> None:
        """Stop counting a stream its session dropped."""
        if stream in self._streams:
            del self._streams[stream]
            self.used -= stream.size

    def reclaim(self, current: _Stream) -> None:
        """Drop the oldest streams (never `current`) until the total is within the bound."""
        for stream in list(self._streams):
            if self.used <= self.max_bytes:
                return
            if stream is not current:
                logger.info("event store over %d bytes: dropping an old stream", self.max_bytes)
                stream.owner.drop(stream)


class SessionEvents(EventStore):
    """One MCP session's event store (the SDK's `EventStore`), bounded as the module says."""

    def __init__(self, budget: EventBudget) -> None:
        self._budget = budget
        self._by_id: dict[StreamId, _Stream] = {}  # insertion order: oldest first
        self._by_number: dict[int, _Stream] = {}
        self._numbers = itertools.count(1)
        self._seqs = itertools.count(1)
        self._closed = False

    @property
    def retained_bytes(self) -> int:
        """The counted bytes this session's streams hold."""
        return sum(stream.size for stream in self._by_id.values())

    async def store_event(
        self, stream_id: StreamId, message: types.JSONRPCMessage | None
    ) -> EventId:
        """Retain one event of `stream_id` (None: the priming event); its SSE id."""
        stream = self._by_id.get(stream_id) or self._open(stream_id)
        seq = next(self._seqs)
        data = b"" if message is None else _kept(message)
        if data is None:
            logger.info("an event of %d+ bytes is not retained for resumption", MAX_STREAM_BYTES)
        elif not self._closed:
            self._append(stream, seq, data)
        return f"{stream.number}-{seq}"

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send what followed `last_event_id` in its stream; the stream's id (None: unknown)."""
        number, _, seq_text = last_event_id.partition("-")
        if not (number.isdigit() and seq_text.isdigit()):
            return None
        stream = self._by_number.get(int(number))
        if stream is None:
            return None
        after = int(seq_text)
        # Until nothing newer is left: events stored while an earlier one was being sent
        # are replayed too (the SDK registers the live tail only once this returns).
        while pending := [(s, d) for s, d in stream.events if s > after and d]:
            for seq, data in pending:
                message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
                await send_callback(EventMessage(message, f"{stream.number}-{seq}"))
                after = seq
        return stream.stream_id

    def drop(self, stream: _Stream) -> None:
        """Forget one stream (its ids then replay nothing)."""
        if self._by_id.get(stream.stream_id) is stream:
            del self._by_id[stream.stream_id]
        self._by_number.pop(stream.number, None)
        self._budget.forget(stream)

    def close(self) -> None:
        """The session ended: release everything, retain nothing more."""
        self._closed = True
        for stream in list(self._by_id.values()):
            self.drop(stream)

    def _open(self, stream_id: StreamId) -> _Stream:
        if len(self._by_id) >= MAX_SESSION_STREAMS:
            self.drop(next(iter(self._by_id.values())))
        stream = _Stream(stream_id, next(self._numbers), self)
        if not self._closed:
            self._by_id[stream_id] = stream
            self._by_number[stream.number] = stream
            self._budget.track(stream)
        return stream

    def _append(self, stream: _Stream, seq: int, data: bytes) -> None:
        self._budget.used += stream.push(seq, data)
        # The newest event always stays: it is the one a resuming client is waiting for.
        while len(stream.events) > 1 and (
            len(stream.events) > MAX_STREAM_EVENTS or stream.size > MAX_STREAM_BYTES
        ):
            self._budget.used -= stream.pop_oldest()
        self._budget.reclaim(stream)
