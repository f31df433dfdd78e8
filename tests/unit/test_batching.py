"""Opt-in coalescing (shellgate.common.grpc.batching) and the joined messages it sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from shellgate.common.grpc.batching import MAX_HELD_BYTES, coalesced
from shellgate.common.grpc.output_encoding import output_event, start_batch
from shellgate.router.service.wire.events import batch_body, batch_response
from shellgate.v1 import exec_pb2, router_pb2


def _join(parts: list[bytes]) -> bytes:
    return b"[" + b"|".join(parts) + b"]"


async def _scripted(
    script: list[tuple[float, bytes, bool]], log: list[str] | None = None
) -> AsyncIterator[tuple[bytes, bool]]:
    """Each entry: wait this long, then produce (message, send now)."""
    try:
        for delay, message, now in script:
            await asyncio.sleep(delay)
            yield message, now
    finally:
        if log is not None:
            log.append("producer closed")


async def _collect(events: AsyncIterator[tuple[bytes, bool]], window_ms: int) -> list[bytes]:
    return [m async for m in coalesced(events, window_ms, _join)]


def test_events_within_the_window_leave_as_one_message() -> None:
    script = [(0, b"a", False), (0, b"b", False), (0.005, b"c", False)]
    assert asyncio.run(_collect(_scripted(script), 1000)) == [b"[a|b|c]"]


def test_a_window_of_one_event_is_that_event() -> None:
    assert asyncio.run(_collect(_scripted([(0, b"a", False)]), 1000)) == [b"a"]


def test_the_window_expiring_sends_what_is_held_while_the_producer_waits() -> None:
    async def run() -> list[tuple[float, bytes]]:
        t0 = asyncio.get_running_loop().time()
        script = [(0, b"a", False), (0, b"b", False), (0.5, b"c", False)]
        return [
            (asyncio.get_running_loop().time() - t0, m)
            async for m in coalesced(_scripted(script), 20, _join)
        ]

    (t_first, first), (t_second, second) = asyncio.run(run())
    assert (first, second) == (b"[a|b]", b"c")
    # The first message left when the window expired, long before the producer's next event.
    assert t_first < t_second


def test_an_urgent_event_sends_the_held_ones_at_once() -> None:
    async def run() -> tuple[list[bytes], bool]:
        gate = asyncio.Event()

        async def events() -> AsyncIterator[tuple[bytes, bool]]:
            yield b"a", False
            yield b"pending", True
            await gate.wait()
            yield b"z", False

        got: list[bytes] = []
        stream = coalesced(events(), 1000, _join)
        got.append(await anext(stream))
        # Arrived although the window is a second and the producer is now blocked.
        waiting = not gate.is_set()
        gate.set()
        got.extend([m async for m in stream])
        return got, waiting

    got, waiting = asyncio.run(run())
    assert got == [b"[a|pending]", b"z"] and waiting


def test_held_bytes_past_the_cap_are_sent_without_waiting() -> None:
    big = b"x" * MAX_HELD_BYTES
    script = [(0, b"a", False), (0, big, False), (0, b"b", False)]
    assert asyncio.run(_collect(_scripted(script), 1000)) == [_join([b"a", big]), b"b"]


def test_a_producer_error_is_raised_to_the_consumer() -> None:
    async def failing() -> AsyncIterator[tuple[bytes, bool]]:
        yield b"a", False
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(_collect(failing(), 1000))


def test_closing_the_stream_cancels_and_finishes_the_producer() -> None:
    async def run() -> list[str]:
        log: list[str] = []
        stream = coalesced(_scripted([(0, b"a", True), (60, b"never", False)], log), 1000, _join)
        assert await anext(stream) == b"a"
        await stream.aclose()
        return list(log)

    assert asyncio.run(run()) == ["producer closed"]


def test_closing_while_the_producer_waits_for_room_closes_it_at_once() -> None:
    async def run() -> list[str]:
        log: list[str] = []
        script = [(0, str(i).encode(), True) for i in range(10)]
        stream = coalesced(_scripted(script, log), 1000, _join)
        assert await anext(stream) == b"0"
        for _ in range(5):  # the producer fills the two ready slots and waits for room
            await asyncio.sleep(0)
        await stream.aclose()
        # A copy: asyncio.run finalizes forgotten generators after `run` returns.
        return list(log)

    assert asyncio.run(run()) == ["producer closed"]


def test_the_producer_waits_while_two_messages_wait_to_be_sent() -> None:
    async def run() -> int:
        produced = 0

        async def events() -> AsyncIterator[tuple[bytes, bool]]:
            nonlocal produced
            for i in range(10):
                produced += 1
                yield str(i).encode(), True

        stream = coalesced(events(), 1000, _join)
        assert await anext(stream) == b"0"
        for _ in range(5):
            await asyncio.sleep(0)
        seen = produced
        await stream.aclose()
        return seen

    # One sent, two ready, one more produced and held back by the wait for room.
    assert asyncio.run(run()) <= 4


def test_start_batch_is_protobufs_encoding_of_event_and_more() -> None:
    started = exec_pb2.StartResponse(
        event=exec_pb2.ProcessEvent(started=exec_pb2.ProcessStarted(process_id="p1", pid=42))
    )
    exited = exec_pb2.StartResponse(
        event=exec_pb2.ProcessEvent(
            exited=exec_pb2.ProcessExited(status=exec_pb2.ExitStatus(code=3))
        )
    )
    parts = [started.SerializeToString(), output_event(1, 1, b"hi\n", 3), exited.SerializeToString()]
    joined = exec_pb2.StartResponse.FromString(start_batch(parts))
    assert joined.event == started.event
    assert [e.WhichOneof("event") for e in joined.more] == ["output", "exited"]
    assert joined.more[0].output.data == b"hi\n" and joined.more[0].output.end_offset == 3
    expected = exec_pb2.StartResponse(event=started.event, more=[joined.more[0], exited.event])
    assert start_batch(parts) == expected.SerializeToString()


def test_execute_batch_is_protobufs_encoding() -> None:
    events = [
        router_pb2.ExecuteResponse(started=router_pb2.ExecutionStarted(process_id="p")),
        router_pb2.ExecuteResponse(completed=router_pb2.ExecutionCompleted(output_text="ok")),
    ]
    parts = [e.SerializeToString() for e in events]
    assert batch_body(parts) == router_pb2.ExecuteBatch(events=events).SerializeToString()
    assert batch_body(parts) == router_pb2.ExecuteOnceResponse(events=events).SerializeToString()
    assert batch_response(parts) == router_pb2.ExecuteResponse(
        batch=router_pb2.ExecuteBatch(events=events)
    ).SerializeToString()
