"""The one bounded output channel: bounds, drops counted exactly, coalescing, pacing, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.output_channel import (
    ChannelClosedError,
    OutputChannel,
    Received,
    Sent,
)

SETTINGS = settings(max_examples=200, deadline=None)


def run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(main())


async def drain(channel: OutputChannel[Any]) -> list[Received[Any]]:
    """Everything queued now (the channel must be closed, or this waits)."""
    return [item async for item in channel]


async def settle() -> None:
    """Let every ready task run until it blocks."""
    for _ in range(5):
        await asyncio.sleep(0)


# --- construction, order, close ---------------------------------------------------------


def test_a_channel_needs_a_bound() -> None:
    with pytest.raises(ValueError):
        OutputChannel[int]()
    with pytest.raises(ValueError):
        OutputChannel[int](max_bytes=0)
    with pytest.raises(ValueError):
        OutputChannel[int](max_chunks=0)


def test_fifo_with_markers_then_none_after_close() -> None:
    async def main() -> None:
        ch: OutputChannel[str] = OutputChannel(max_bytes=100)
        assert ch.send_nowait("start") is Sent.QUEUED
        assert ch.send_nowait("a", b"aa") is Sent.QUEUED
        assert ch.send_nowait("b", b"bbb") is Sent.QUEUED
        assert (ch.queued_bytes, ch.queued_chunks) == (5, 2)
        ch.close()
        got = await drain(ch)
        assert [(r.meta, r.data, r.parts) for r in got] == [
            ("start", b"", 1), ("a", b"aa", 1), ("b", b"bbb", 1)
        ]
        assert (ch.queued_bytes, ch.queued_chunks) == (0, 0)
        # Closed and drained: at once, every time.
        assert await ch.receive() is None
        assert await ch.receive() is None

    run(main)


def test_close_wakes_a_waiting_receiver_and_sending_after_close_is_a_bug() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=10)
        receiver = asyncio.create_task(ch.receive())
        await settle()
        assert not receiver.done()
        ch.close()
        assert await receiver is None
        with pytest.raises(ChannelClosedError):
            ch.send_nowait(1, b"x")
        with pytest.raises(ChannelClosedError):
            await ch.send(1, b"x")

    run(main)


def test_one_consumer_at_a_time() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=10)
        first = asyncio.create_task(ch.receive())
        await settle()
        with pytest.raises(RuntimeError):
            await ch.receive()
        ch.send_nowait(1, b"x")
        got = await first
        assert got is not None and got.data == b"x"

    run(main)


# --- the drop policy ----------------------------------------------------------------------


def test_send_nowait_drops_past_the_byte_budget_and_counts_exactly() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=10)
        assert ch.send_nowait(1, b"123456") is Sent.QUEUED
        assert ch.send_nowait(2, b"12345") is Sent.DROPPED  # 11 > 10
        assert ch.send_nowait(3, b"1234") is Sent.QUEUED  # exactly 10
        assert ch.send_nowait(4, b"1") is Sent.DROPPED
        # Markers carry no bytes: never dropped, even on a full channel.
        assert ch.send_nowait(5) is Sent.QUEUED
        assert (ch.dropped_bytes, ch.dropped_chunks) == (6, 2)
        first = await ch.receive()
        assert first is not None and first.meta == 1
        # Room again.
        assert ch.send_nowait(6, b"123456") is Sent.QUEUED
        ch.close()
        assert [r.meta for r in await drain(ch)] == [3, 5, 6]

    run(main)


def test_an_oversized_chunk_only_enters_an_empty_channel() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=4)
        assert ch.send_nowait(1, b"123456789") is Sent.QUEUED
        assert ch.send_nowait(2, b"1") is Sent.DROPPED
        await ch.receive()
        ch.send_nowait(3, b"1")
        assert ch.send_nowait(4, b"123456789") is Sent.DROPPED
        # A waiting send gets in once the channel is empty: it can never wait forever.
        sender = asyncio.create_task(ch.send(5, b"123456789"))
        await settle()
        assert not sender.done()
        await ch.receive()
        assert await sender is Sent.QUEUED
        assert ch.queued_bytes == 9

    run(main)


def test_chunk_bound() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_chunks=2)
        assert ch.send_nowait(1, b"a" * 1000) is Sent.QUEUED
        assert ch.send_nowait(2, b"b") is Sent.QUEUED
        assert ch.send_nowait(3, b"c") is Sent.DROPPED
        assert ch.send_nowait(4) is Sent.QUEUED  # a marker takes no chunk slot
        assert ch.queued_chunks == 2
        sender = asyncio.create_task(ch.send(5, b"d"))
        await settle()
        assert not sender.done()
        await ch.receive()
        assert await sender is Sent.QUEUED

    run(main)


# --- back-pressure and cancellation -------------------------------------------------------


def test_send_waits_for_room_and_keeps_order() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=4)
        sent: list[int] = []

        async def produce() -> None:
            for i in range(10):
                await ch.send(i, bytes([i]) * 3)
                sent.append(i)
                # The bound holds after every send (one 3-byte chunk fits, two do not).
                assert ch.queued_bytes <= 4
            ch.close()

        producer = asyncio.create_task(produce())
        await settle()
        assert sent == [0]  # the second chunk waits: back-pressure
        got = [r.meta for r in await drain(ch)]
        await producer
        assert got == list(range(10)) and ch.dropped_chunks == 0

    run(main)


def test_a_send_cancelled_while_waiting_queues_nothing_and_loses_no_wakeup() -> None:
    async def main() -> None:
        ch: OutputChannel[str] = OutputChannel(max_chunks=1)
        ch.send_nowait("held", b"x")
        cancelled = asyncio.create_task(ch.send("cancelled", b"y"))
        waiting = asyncio.create_task(ch.send("waiting", b"z"))
        await settle()
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert (ch.queued_chunks, ch.queued_bytes) == (1, 1)
        await ch.receive()
        # The other sender still gets the room the cancelled one would have had.
        assert await waiting is Sent.QUEUED
        ch.close()
        assert [r.meta for r in await drain(ch)] == ["waiting"]

    run(main)


def test_a_send_cancelled_right_after_its_wakeup_hands_the_room_on() -> None:
    async def main() -> None:
        ch: OutputChannel[str] = OutputChannel(max_chunks=1)
        ch.send_nowait("held", b"x")
        first = asyncio.create_task(ch.send("first", b"y"))
        second = asyncio.create_task(ch.send("second", b"z"))
        await settle()
        await ch.receive()  # wakes both waiters
        first.cancel()  # before it ran: its wake-up is not used
        await settle()
        assert second.done() and second.result() is Sent.QUEUED
        assert first.cancelled()

    run(main)


def test_a_cancelled_receive_takes_nothing() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=10)
        receiver = asyncio.create_task(ch.receive())
        await settle()
        receiver.cancel()
        with pytest.raises(asyncio.CancelledError):
            await receiver
        ch.send_nowait(1, b"a")
        got = await ch.receive()
        assert got is not None and got.meta == 1

    run(main)


def test_abandon_discards_and_never_blocks_the_producer() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_chunks=1)
        ch.send_nowait(1, b"abc")
        blocked = asyncio.create_task(ch.send(2, b"de"))
        await settle()
        ch.abandon()
        assert await blocked is Sent.DROPPED
        assert await ch.send(3, b"f") is Sent.DROPPED
        assert ch.send_nowait(4, b"g") is Sent.DROPPED
        assert (ch.dropped_bytes, ch.dropped_chunks, ch.queued_bytes) == (7, 4, 0)
        assert await ch.receive() is None

    run(main)


# --- coalescing ---------------------------------------------------------------------------


def test_coalescing_merges_contiguous_chunks_of_one_key_up_to_the_size() -> None:
    async def main() -> None:
        ch: OutputChannel[str] = OutputChannel(max_bytes=100, coalesce_bytes=6)
        assert ch.send_nowait("a1", b"aa", key="a") is Sent.QUEUED
        assert ch.send_nowait("a2", b"aa", key="a") is Sent.MERGED
        assert ch.send_nowait("a3", b"aa", key="a") is Sent.MERGED
        assert ch.send_nowait("a4", b"a", key="a") is Sent.QUEUED  # 7 > 6
        assert ch.send_nowait("b1", b"b", key="b") is Sent.QUEUED  # another key
        assert ch.send_nowait("a5", b"a", key="a") is Sent.QUEUED  # not the newest entry
        assert ch.send_nowait("a6", b"a", key="a", contiguous=False) is Sent.QUEUED
        assert ch.send_nowait("a7", b"a", key="a") is Sent.MERGED  # joins the new run
        assert ch.send_nowait("m") is Sent.QUEUED  # a marker
        assert ch.send_nowait("a8", b"a", key="a") is Sent.QUEUED  # never into a marker
        assert ch.send_nowait("n1", b"n") is Sent.QUEUED  # no key: never merged
        assert ch.send_nowait("n2", b"n") is Sent.QUEUED
        assert (ch.queued_bytes, ch.queued_chunks) == (14, 8)
        ch.close()
        got = [(r.meta, r.data, r.parts) for r in await drain(ch)]
        assert got == [
            ("a1", b"aaaaaa", 3), ("a4", b"a", 1), ("b1", b"b", 1), ("a5", b"a", 1),
            ("a6", b"aa", 2), ("m", b"", 1), ("a8", b"a", 1), ("n1", b"n", 1), ("n2", b"n", 1),
        ]

    run(main)


def test_no_merge_into_an_entry_already_received() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=100, coalesce_bytes=100)
        ch.send_nowait(1, b"a", key="k")
        await ch.receive()
        assert ch.send_nowait(2, b"b", key="k") is Sent.QUEUED

    run(main)


def test_a_merge_still_respects_the_byte_budget() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=4, coalesce_bytes=100)
        ch.send_nowait(1, b"abc", key="k")
        assert ch.send_nowait(2, b"de", key="k") is Sent.DROPPED
        assert ch.send_nowait(3, b"d", key="k") is Sent.MERGED

    run(main)


# --- pacing -------------------------------------------------------------------------------


def test_room_paces_until_the_consumer_drains_below_the_mark() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=100, pace_bytes=4, pace_stall_s=30)
        ch.send_nowait(1, b"ab")
        assert ch.room() is None  # below the mark
        ch.send_nowait(2, b"cd")
        pause = ch.room()
        assert pause is not None
        paused = asyncio.ensure_future(pause)
        await settle()
        assert not paused.done()
        await ch.receive()  # 2 bytes left: below the mark
        await asyncio.wait_for(paused, 5)

    run(main)


def test_a_stall_suspends_pacing_until_the_backlog_drains() -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=100, pace_bytes=4, pace_stall_s=0.05)
        ch.send_nowait(1, b"abcd")
        pause = ch.room()
        assert pause is not None
        await asyncio.wait_for(pause, 5)  # nobody reads: the pause ends by itself
        ch.send_nowait(2, b"efgh")
        assert ch.room() is None  # stalled: the producer is no longer held
        await ch.receive()
        assert ch.room() is None  # 4 bytes still queued (at the mark), the stall lasts
        await ch.receive()  # drained below the mark: pacing is back
        ch.send_nowait(3, b"ijkl")
        again = ch.room()
        assert again is not None
        ch.close()  # a closing channel releases a paced producer
        await asyncio.wait_for(again, 5)

    run(main)


def test_no_pacing_without_a_mark() -> None:
    ch: OutputChannel[int] = OutputChannel(max_bytes=10)
    ch.send_nowait(1, b"0123456789")
    assert ch.room() is None


# --- properties ---------------------------------------------------------------------------

SEND = st.tuples(
    st.just("send"),
    st.integers(min_value=0, max_value=12),
    st.sampled_from([None, "a", "b"]),
    st.booleans(),
)
OPS = st.lists(st.one_of(SEND, st.just(("recv",))), max_size=60)


@SETTINGS
@given(
    st.integers(min_value=1, max_value=30),
    st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
    st.integers(min_value=0, max_value=20),
    OPS,
)
def test_send_nowait_loses_nothing_uncounted_and_keeps_the_bounds(
    max_bytes: int, max_chunks: int | None, coalesce: int, ops: list[tuple[Any, ...]]
) -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(
            max_bytes=max_bytes, max_chunks=max_chunks, coalesce_bytes=coalesce
        )
        accepted: list[tuple[int, bytes, str | None, bool]] = []
        received: list[Received[int]] = []
        total = 0
        for n, op in enumerate(ops):
            if op[0] == "recv":
                if ch.queued_chunks or ch.queued_bytes:
                    got = await ch.receive()
                    assert got is not None
                    received.append(got)
                continue
            _, size, key, contiguous = op
            data = bytes([n % 256]) * size
            total += size
            before_bytes, before_chunks = ch.queued_bytes, ch.queued_chunks
            outcome = ch.send_nowait(n, data, key=key, contiguous=contiguous)
            if outcome is Sent.DROPPED:
                # Dropped only when there really was no room.
                over_bytes = before_bytes > 0 and before_bytes + size > max_bytes
                over_chunks = max_chunks is not None and before_chunks >= max_chunks
                assert size > 0 and (over_bytes or over_chunks)
            else:
                accepted.append((n, data, key, contiguous))
            assert ch.queued_bytes <= max_bytes or ch.queued_chunks == 1
            assert max_chunks is None or ch.queued_chunks <= max_chunks
        ch.close()
        received += await drain(ch)
        # Nothing lost that was not counted, nothing reordered, nothing invented.
        assert sum(len(a[1]) for a in accepted) + ch.dropped_bytes == total
        assert b"".join(r.data for r in received) == b"".join(a[1] for a in accepted)
        assert sum(r.parts for r in received) == len(accepted)
        # Merged entries: consecutive accepted sends, one key, contiguous, within the size.
        cursor = 0
        for r in received:
            run_ = accepted[cursor : cursor + r.parts]
            assert r.meta == run_[0][0]
            if r.parts > 1:
                assert len(r.data) <= coalesce
                assert {a[2] for a in run_} == {run_[0][2]} and run_[0][2] is not None
                assert all(a[3] for a in run_[1:])
            cursor += r.parts

    run(main)


@SETTINGS
@given(
    st.integers(min_value=1, max_value=16),
    st.lists(st.integers(min_value=0, max_value=10), max_size=40),
    st.lists(st.integers(min_value=0, max_value=3), max_size=40),
)
def test_send_with_a_slow_consumer_is_lossless_and_bounded(
    max_bytes: int, sizes: list[int], pauses: list[int]
) -> None:
    async def main() -> None:
        ch: OutputChannel[int] = OutputChannel(max_bytes=max_bytes, coalesce_bytes=8)
        peak = 0

        async def produce() -> None:
            nonlocal peak
            for i, size in enumerate(sizes):
                await ch.send(i, bytes([i % 256]) * size, key="k")
                peak = max(peak, ch.queued_bytes if ch.queued_chunks > 1 else 0)
            ch.close()

        producer = asyncio.create_task(produce())
        got: list[Received[int]] = []
        for step in range(10_000):
            for _ in range(pauses[step % len(pauses)] if pauses else 0):
                await asyncio.sleep(0)
            item = await ch.receive()
            if item is None:
                break
            got.append(item)
        await producer
        assert b"".join(r.data for r in got) == b"".join(
            bytes([i % 256]) * size for i, size in enumerate(sizes)
        )
        assert ch.dropped_chunks == 0
        assert peak <= max_bytes

    run(main)
