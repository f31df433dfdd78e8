"""A detached process's head/tail capture on the exec-server (`ManagedProcess.drain_capture`):
each drain returns exactly the head/tail of the output since the previous one, whatever the
replay buffer evicted, and the drains partition the output (no byte twice, none lost).

Scripted processes (tests/scripted_spawner.py), no process started; the daemon over real
processes and real replicas: tests/integration/test_replicas_session_output.py.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.head_tail import HeadTailBuffer, HeadTailSnapshot, joined
from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.retention import Retention
from shellgate.execserver.managed import ManagedProcess

from tests.scripted_spawner import Gate, Out, Script, ScriptedProcess
from tests.waiting import eventually_async

BUDGET = 64


def _managed(script: Script) -> ManagedProcess:
    request = SpawnRequest(("scripted",), "/tmp", {})
    return ManagedProcess(
        process_id="p1", caller="c", owner="o", request=request,
        handle=ScriptedProcess(script, request), retention=Retention(32), detached=True,
        owner_ttl_ms=60_000, sandboxed=False, clock=lambda: 0.0,
        capture=HeadTailBuffer(BUDGET),
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    segments=st.lists(
        st.lists(st.binary(min_size=1, max_size=40), min_size=0, max_size=6),
        min_size=1, max_size=5,
    ),
)  # fmt: skip
def test_drains_partition_the_output_into_head_tail_snapshots(
    segments: list[list[bytes]],
) -> None:
    async def main() -> None:
        gates = [Gate() for _ in segments]
        steps: list[Out | Gate] = []
        for gate, chunks in zip(gates, segments, strict=True):
            steps += [*(Out(c) for c in chunks), gate]
        proc = _managed(Script(tuple(steps)))
        proc.start_tasks(None)
        produced = 0
        for gate, chunks in zip(gates, segments, strict=True):
            await gate.reached.wait()
            produced += sum(map(len, chunks))
            await eventually_async(lambda p=produced: proc.retention.added_bytes == p,
                                   "the pump read the segment", interval_s=0.005)  # fmt: skip
            drained = proc.drain_capture()
            assert drained is not None and not drained.closed
            expected = HeadTailBuffer(BUDGET)
            for chunk in chunks:
                expected.push(chunk)
            # Exactly this segment's head/tail, though retention kept at most 32 bytes.
            assert drained.snapshot == expected.drain()
            assert drained.through_offset == produced
            gate.open()
        await eventually_async(lambda: proc.closed, "closed", interval_s=0.005)
        last = proc.drain_capture()
        assert last is not None and last.closed and last.snapshot.raw_byte_count == 0
        assert proc.exit_status() is not None and not proc.awaits_final_drain
        await proc.dispose()

    asyncio.run(main())


def test_a_process_started_without_detach_keeps_no_capture() -> None:
    async def main() -> None:
        request = SpawnRequest(("scripted",), "/tmp", {})
        proc = ManagedProcess(
            process_id="p2", caller="c", owner="o", request=request,
            handle=ScriptedProcess(Script((Out(b"x"),)), request), retention=Retention(32),
            detached=False, owner_ttl_ms=60_000, sandboxed=False, clock=lambda: 0.0,
        )  # fmt: skip
        proc.start_tasks(None)
        await eventually_async(lambda: proc.closed, "closed", interval_s=0.005)
        assert proc.drain_capture() is None and not proc.awaits_final_drain
        await proc.dispose()

    asyncio.run(main())


@settings(max_examples=200, deadline=None)
@given(
    first=st.lists(st.binary(min_size=1, max_size=50), max_size=6),
    second=st.lists(st.binary(min_size=1, max_size=50), max_size=6),
)
def test_joined_snapshots_equal_one_buffer_over_both(
    first: list[bytes], second: list[bytes]
) -> None:
    def snap(chunks: list[bytes]) -> HeadTailSnapshot:
        buffer = HeadTailBuffer(BUDGET)
        for chunk in chunks:
            buffer.push(chunk)
        return buffer.drain()

    # What a held drain joined with the next one returns is what one drain of both would.
    assert joined(snap(first), snap(second), BUDGET) == snap(first + second)


def test_a_held_drain_is_returned_again_until_acknowledged() -> None:
    async def main() -> None:
        gates = [Gate(), Gate()]
        proc = _managed(Script((Out(b"one\n"), gates[0], Out(b"two\n"), gates[1],
                                Out(b"three\n"))))  # fmt: skip
        proc.start_tasks(None)
        await gates[0].reached.wait()
        await eventually_async(lambda: proc.retention.added_bytes == 4, "read", interval_s=0.005)
        # A router takes "one" (held) and dies before storing its answer.
        lost = proc.drain_capture(hold=True, acknowledged=0)
        assert lost is not None and lost.snapshot.to_bytes() == b"one\n"
        gates[0].open()
        await gates[1].reached.wait()
        await eventually_async(lambda: proc.retention.added_bytes == 8, "read", interval_s=0.005)
        # The next poll acknowledges only what its record stored (0): "one" comes again.
        again = proc.drain_capture(hold=True, acknowledged=0)
        assert again is not None and again.snapshot.to_bytes() == b"one\ntwo\n"
        gates[1].open()
        await eventually_async(lambda: proc.closed, "closed", interval_s=0.005)
        # That answer was stored (acknowledged): the last drain has only the rest.
        last = proc.drain_capture(hold=True, acknowledged=again.through_seq)
        assert last is not None and last.closed and last.snapshot.to_bytes() == b"three\n"
        # A release forgets a held drain: nobody polls again.
        released = proc.drain_capture(release=True, acknowledged=0)
        assert released is not None and released.snapshot.to_bytes() == b""
        assert proc.held_drain is None
        await proc.dispose()

    asyncio.run(main())
