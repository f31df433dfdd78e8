"""An attached retry's follower stream is bounded: output past its backlog is dropped,
counted and logged; the events that end the stream always arrive (call_ledger)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from shellgate.common.process.base import Stream
from shellgate.router.runtime.call.events import CompletedEvent, OutputEvent, Termination
from shellgate.router.runtime.call.ledger import (
    FOLLOWER_BACKLOG_BYTES,
    Attached,
    CallLedger,
    _Live,
    follower_channel,
)

CHUNK = b"x" * 65_536
DONE = CompletedEvent("{}", "Exit code: 0\n", True, 0, None, 1, None, False, Termination.EXITED)


def test_a_follower_that_never_reads_holds_at_most_its_backlog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    live = _Live("digest")
    channel = follower_channel()
    live.followers.add(channel)
    for seq in range(1_000):  # 64 MiB offered to a reader that is not reading
        live.publish(OutputEvent(0, Stream.STDOUT, seq, CHUNK))
    assert channel.queued_bytes <= FOLLOWER_BACKLOG_BYTES
    assert channel.dropped_chunks == 1_000 - channel.queued_chunks > 0
    live.publish(DONE)
    live.close()

    async def drain() -> list[object]:
        ledger = CallLedger("r1", 60_000)
        return [event async for event in ledger.follow(Attached(live, channel, "c7"))]

    with caplog.at_level(logging.WARNING):
        events = asyncio.run(drain())
    assert events[-1] == DONE
    assert sum(isinstance(e, OutputEvent) for e in events) == 1_000 - channel.dropped_chunks
    assert "call c7: an attached retry fell behind" in caplog.text
    assert f"{channel.dropped_chunks} output chunks" in caplog.text
