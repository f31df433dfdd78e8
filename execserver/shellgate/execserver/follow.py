"""Follow one process's events in seq order from a cursor, reporting gaps and idle input."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from shellgate.common.backoff import Backoff
from shellgate.common.process.base import ExitStatus
from shellgate.common.process.retention import SeqChunk
from shellgate.execserver.awaiting_input import is_awaiting_input
from shellgate.execserver.managed import ManagedProcess

# How long a follower sits idle before it checks whether the process waits for input.
IDLE_PROBE_MS = 500
# Each "not awaiting input" answer doubles the wait before the next probe, up to this cap;
# output or input resets it. So a process that starts reading stdin after a long silence is
# reported up to IDLE_PROBE_MAX_MS (not IDLE_PROBE_MS) later, and 1 000 idle sessions cost
# one probe each per 2 s instead of per 0.5 s.
IDLE_PROBE_MAX_MS = 2_000


@dataclass(frozen=True)
class Gap:
    """Seqs [first, last] were evicted before this follower saw them."""

    first: int
    last: int
    # True when they were evicted because this (paced) follower stalled.
    slow_consumer: bool = False


@dataclass(frozen=True)
class Exited:
    """The exit event."""

    seq: int
    status: ExitStatus
    timed_out: bool
    # The denial verdict over the output seen up to the exit.
    sandbox_denied: bool = False


@dataclass(frozen=True)
class Closed:
    """The closed event (the last one)."""

    seq: int
    # The final denial verdict over all output.
    sandbox_denied: bool = False


@dataclass(frozen=True)
class Awaiting:
    """The process seems blocked reading stdin (no seq)."""

    last_seq: int


Event = SeqChunk | Gap | Exited | Closed | Awaiting


def pending_events(proc: ManagedProcess, cursor: int) -> list[Event]:
    """Events with seq > cursor that are available now, with gaps made explicit."""
    ret = proc.retention
    items: list[SeqChunk | Exited | Closed] = list(ret.chunks_after(cursor))
    if ret.exited_seq is not None and ret.exited_seq > cursor and ret.exit_status is not None:
        items.append(
            Exited(ret.exited_seq, ret.exit_status, proc.timed_out, proc.denied_at_exit)
        )
    if ret.closed_seq is not None and ret.closed_seq > cursor:
        items.append(Closed(ret.closed_seq, proc.sandbox_denied))
    items.sort(key=lambda e: e.seq)
    events: list[Event] = []
    expected = cursor + 1
    for item in items:
        if item.seq > expected:
            events.append(Gap(expected, item.seq - 1))
        events.append(item)
        expected = item.seq + 1
    return events


def delivered_offset(proc: ManagedProcess, cursor: int) -> int:
    """The output offset a follower from `cursor` has seen: where its next retained chunk
    starts (everything so far when none is retained after the cursor)."""
    ret = proc.retention
    after = ret.chunks_after(cursor)
    if after:
        return after[0].end - len(after[0].data)
    return ret.added_bytes


async def follow(
    proc: ManagedProcess, after_seq: int, *, pacer: int | None = None
) -> AsyncIterator[Event]:
    """Yield events after after_seq until closed; counts as attached while running.

    A paced follower (an attached stream: Start, Attach, Codex `process/output`; `pacer`
    from `proc.add_pacer()`, removed by the caller) holds the process back instead of
    losing output; the slowest one governs. Only with a positive stall_ms is a follower
    that stalls that long dropped; its later gaps are SLOW_CONSUMER ones.
    """
    cursor = after_seq
    proc.attached += 1
    idle_reported = False
    probe = Backoff(IDLE_PROBE_MS, IDLE_PROBE_MAX_MS)
    inputs = proc.inputs
    token = pacer
    try:
        while True:
            changed = proc.changed  # take the event before reading state: no lost wakeups
            events = pending_events(proc, cursor)
            for event in events:
                if isinstance(event, Gap) and token is not None and not proc.is_pacer(token):
                    event = Gap(event.first, event.last, slow_consumer=True)
                yield event
                if isinstance(event, SeqChunk | Exited | Closed):
                    cursor = event.seq
                    idle_reported = False
                    probe.reset()
                if isinstance(event, SeqChunk) and token is not None:
                    proc.pacer_progress(token, event.end)
                if isinstance(event, Closed):
                    return
            if events:
                continue
            if proc.inputs != inputs:
                inputs = proc.inputs
                probe.reset()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(probe.current / 1000):
                    await changed.wait()
                continue
            pgid = proc.handle.pgid
            if idle_reported or proc.exited or pgid is None:
                continue
            if await asyncio.to_thread(is_awaiting_input, pgid):
                idle_reported = True
                yield Awaiting(cursor)
            else:
                probe.next()
    finally:
        proc.attached -= 1
        proc.touch()
