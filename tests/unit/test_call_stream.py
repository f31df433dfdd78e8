"""A call's Execute stream: output budget, classic coalescing with contiguous seqs, pacing."""

from __future__ import annotations

import asyncio

from shellgate.common.process.base import Stream
from shellgate.router.runtime.call.events import (
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    StartedEvent,
    Termination,
)
from shellgate.router.runtime.call.stream import (
    COALESCED_OUTPUT_BYTES,
    MAX_QUEUED_OUTPUT_BYTES,
    CallStream,
)

HALF = COALESCED_OUTPUT_BYTES // 2
OUT, ERR = Stream.STDOUT, Stream.STDERR


def _out(seq: int, size: int = HALF, stream: Stream = OUT, element: int = 0) -> OutputEvent:
    return OutputEvent(element, stream, seq, bytes([seq % 256]) * size)


def _completed() -> CompletedEvent:
    return CompletedEvent("{}", "done", True, 0, None, 1, None, False, Termination.EXITED, ())


async def _take(stream: CallStream, count: int | None = None) -> list[ExecuteEvent]:
    got: list[ExecuteEvent] = []
    while count is None or len(got) < count:
        event = await stream.receive()
        if event is None:
            break
        got.append(event)
    return got


def _seqs(events: list[ExecuteEvent]) -> list[tuple[int, int, int]]:
    return [
        (e.element_index, e.seq, len(e.data)) for e in events if isinstance(e, OutputEvent)
    ]


def test_classic_output_coalesces_behind_a_slow_client_and_seqs_stay_contiguous() -> None:
    async def main() -> None:
        stream = CallStream(coalesce=True)
        started = StartedEvent(0, "local", "p", 1, None, False)
        stream.emit(started)
        for seq in range(1, 21):  # 20 × 512 KiB while the client reads nothing
            stream.emit(_out(seq))
        # 16 chunks fit the budget, two per message; the last 4 were dropped and counted.
        assert (stream.dropped_chunks, stream.dropped_bytes) == (4, 4 * HALF)
        first = await _take(stream, 2)
        assert first[0] is started
        # The client took one message: a later chunk fits again. It follows a drop, so it
        # starts a new message (whose seq shows the gap), and the next one joins it.
        stream.emit(_out(21))
        stream.emit(_out(22))
        stream.emit(_completed())
        assert stream.ended
        stream.close()
        rest = await _take(stream)
        assert isinstance(rest[-1], CompletedEvent)
        seqs = _seqs(first + rest)
        assert seqs == [(0, s, 2 * HALF) for s in range(1, 9)] + [(0, 13, 2 * HALF)]
        # Merged messages carry their parts in order.
        merged = [e for e in rest if isinstance(e, OutputEvent)][-1]
        assert merged.data == bytes([21]) * HALF + bytes([22]) * HALF

    asyncio.run(main())


def test_classic_merges_only_one_element_and_stream_at_a_time() -> None:
    async def main() -> None:
        stream = CallStream(coalesce=True)
        for event in (_out(1, 3), _out(2, 3, ERR), _out(3, 3), _out(4, 3),
                      _out(1, 2, element=1), _out(2, 2, element=1)):  # fmt: skip
            stream.emit(event)
        stream.close()
        got = await _take(stream)
        outputs = [e for e in got if isinstance(e, OutputEvent)]
        assert [(e.element_index, e.stream, e.seq, e.data) for e in outputs] == [
            (0, OUT, 1, bytes([1]) * 3),
            (0, ERR, 2, bytes([2]) * 3),
            (0, OUT, 3, bytes([3]) * 3 + bytes([4]) * 3),
            (1, OUT, 1, bytes([1]) * 2 + bytes([2]) * 2),
        ]

    asyncio.run(main())


def test_unified_output_is_never_merged_and_keeps_its_seqs() -> None:
    async def main() -> None:
        stream = CallStream(coalesce=False)
        assert stream.room() is None  # nothing waits for the client yet
        for seq in range(1, 21):
            stream.emit(_out(seq))
        # An attached unified reader is paced too: with the backlog at the pace it waits.
        pause = stream.room()
        assert pause is not None
        waiter = asyncio.ensure_future(pause)
        await asyncio.sleep(0)
        assert not waiter.done()
        waiter.cancel()
        stream.emit(_completed())  # never dropped, even on a full budget
        assert stream.dropped_chunks == 20 - MAX_QUEUED_OUTPUT_BYTES // HALF
        await _take(stream, 1)
        stream.emit(_out(21))
        stream.close()
        rest = await _take(stream)
        seqs = [s for _, s, _ in _seqs(rest)]
        # Seqs pass through untouched: the gap is where the dropped chunks were.
        assert seqs == [*range(2, 17), 21]
        assert isinstance(rest[-2], CompletedEvent)

    asyncio.run(main())


def test_classic_room_paces_the_reader_until_the_client_reads() -> None:
    async def main() -> None:
        stream = CallStream(coalesce=True)
        room = stream.room
        assert room is not None
        for seq in range(1, 5):  # 2 MiB: the pacing mark
            stream.emit(_out(seq))
            if seq < 4:
                assert room() is None
        pause = room()
        assert pause is not None
        paused = asyncio.ensure_future(pause)
        await asyncio.sleep(0.01)
        assert not paused.done()
        await _take(stream, 1)
        await asyncio.wait_for(paused, 5)

    asyncio.run(main())


def test_events_after_the_end_are_ignored() -> None:
    async def main() -> None:
        stream = CallStream(coalesce=False)
        stream.close()
        stream.emit(_out(1))  # a listener that outlived its call
        assert await stream.receive() is None

    asyncio.run(main())
