"""Exec-server faults with the daemon as a real subprocess: kill -9, slow consumer, SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from shellgate.v1 import exec_pb2 as pb

from tests.conftest import marked_pids
from tests.execserver_harness import (
    collect,
    daemon_subprocess,
    exec_stub,
    in_process_daemon,
    start_request,
)
from tests.waiting import eventually, eventually_async


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.allow_orphans
def test_kill_9_of_the_daemon_leaves_no_orphaned_child(orphan_sweep: str) -> None:
    with daemon_subprocess() as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                for tty in (False, True):
                    script = "trap '' TERM INT HUP; (sleep 60) & sleep 60"
                    call = stub.Start(start_request(["sh", "-c", script], detach=True, tty=tty))
                    await call.read()
                    call.cancel()

        asyncio.run(main())
        time.sleep(0.3)
        children = [p for p in marked_pids(orphan_sweep) if p != d.proc.pid]
        assert len(children) >= 4
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


@pytest.mark.allow_orphans
def test_sigterm_kills_every_group_and_exits_zero(orphan_sweep: str) -> None:
    with daemon_subprocess() as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                call = stub.Start(start_request(["sh", "-c", "sleep 60 & sleep 60"], detach=True))
                await call.read()
                call.cancel()

        asyncio.run(main())
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(timeout=15) == 0
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 2.0)


def test_slow_consumer_keeps_daemon_memory_bounded() -> None:
    with daemon_subprocess() as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                baseline = _rss_kib(d.proc.pid)
                call = stub.Start(start_request(["yes", "x" * 200]))
                first = await call.read()
                pid = first.event.started.process_id
                # Do not read: output keeps flowing into the bounded retention buffer.
                peak = baseline
                for _ in range(15):
                    await asyncio.sleep(0.2)
                    peak = max(peak, _rss_kib(d.proc.pid))
                reply = await stub.Read(pb.ReadRequest(process_id=pid, after_seq=0))
                assert reply.chunks[0].seq > 1  # the oldest chunks were evicted
                assert sum(len(c.data) for c in reply.chunks) <= 2 * 1024 * 1024
                await stub.Terminate(pb.TerminateRequest(process_id=pid))
                call.cancel()
                # Retention is 1 MiB; allow generous slack for gRPC buffers and allocator.
                print("rss kib", baseline, peak)
                assert peak - baseline < 64 * 1024, (baseline, peak)

        asyncio.run(main())


def test_dropping_a_classic_start_stream_kills_its_group() -> None:
    with daemon_subprocess() as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                call = stub.Start(start_request(["sh", "-c", "sleep 60 & sleep 60"]))
                pid = (await call.read()).event.started.process_id
                call.cancel()

                async def closed() -> bool:
                    listed = await stub.List(pb.ListRequest())
                    states = [p.state for p in listed.processes if p.process_id == pid]
                    return bool(states) and states[0] == pb.PROCESS_STATE_CLOSED

                await eventually_async(closed, "the dropped process closed", 10, 0.1)
                events = await collect(stub.Attach(pb.AttachRequest(process_id=pid)))
                assert events[-1].WhichOneof("event") == "closed"

        asyncio.run(main())


@pytest.mark.allow_orphans
def test_kill_9_takes_down_a_grandchild_whose_group_leader_already_exited(
    orphan_sweep: str,
) -> None:
    # The leader exits at once; only the group guardian knows the grandchild's group.
    with daemon_subprocess() as d:

        async def main() -> None:
            async with exec_stub(d.target) as stub:
                script = "(trap '' TERM HUP INT; exec sleep 60) >/dev/null 2>&1 & exit 0"
                call = stub.Start(start_request(["sh", "-c", script], detach=True))
                async for message in call:
                    if message.event.WhichOneof("event") == "closed":
                        break

        asyncio.run(main())
        time.sleep(0.3)
        children = [p for p in marked_pids(orphan_sweep) if p != d.proc.pid]
        assert len(children) == 1
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


def test_the_group_guardian_ends_with_an_in_process_daemon() -> None:
    async def main() -> int:
        async with in_process_daemon() as daemon, exec_stub(f"127.0.0.1:{daemon.port}") as stub:
            await collect(stub.Start(start_request(["true"])))
            guardian = daemon.table._backend._guardian._proc  # type: ignore[attr-defined]
            assert guardian is not None and guardian.poll() is None
            return int(guardian.pid)

    pid = asyncio.run(main())
    assert not Path(f"/proc/{pid}").exists()


def _guardian_pid(daemon_pid: int) -> int | None:
    # Any of the daemon's threads may have started it (children are listed per thread).
    children = [
        child
        for task in Path(f"/proc/{daemon_pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    for child in children:
        with contextlib.suppress(OSError):
            if b"_guardian.py" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    return None


@pytest.mark.allow_orphans
def test_a_killed_guardian_is_replaced_and_still_covers_running_groups(
    orphan_sweep: str,
) -> None:
    # The guardian is the only parent-death mechanism: if it dies, the daemon starts a new
    # one and registers every live group again, so a later daemon crash still kills them.
    with daemon_subprocess() as d:

        async def start() -> None:
            async with exec_stub(d.target) as stub:
                script = "(trap '' TERM HUP INT; exec sleep 60) >/dev/null 2>&1 & exec sleep 60"
                call = stub.Start(start_request(["sh", "-c", script], detach=True))
                assert (await call.read()).event.WhichOneof("event") == "started"
                call.cancel()

        asyncio.run(start())
        first = _guardian_pid(d.proc.pid)
        assert first is not None
        os.kill(first, signal.SIGKILL)

        def replaced() -> int | None:
            pid = _guardian_pid(d.proc.pid)
            return pid if pid is not None and pid != first else None

        second = eventually(replaced, "a replacement group guardian", 5)
        assert second is not None and second != first
        time.sleep(0.2)  # the replacement reads its registrations in batches
        assert len([p for p in marked_pids(orphan_sweep) if p != d.proc.pid]) == 2
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


@pytest.mark.allow_orphans
def test_a_crashed_daemon_s_groups_get_sigterm_first_then_sigkill(
    orphan_sweep: str, tmp_path: Path
) -> None:
    # The parent-death signal is SIGTERM (spec 05 §1.1), delivered to the whole group by
    # the guardian; a group that ignores it is SIGKILLed after the guardian's grace.
    polite, stubborn = tmp_path / "polite", tmp_path / "stubborn"
    with daemon_subprocess() as d:

        async def start() -> None:
            async with exec_stub(d.target) as stub:
                for marker, then in ((polite, "exit 0"), (stubborn, ":")):
                    # Output to /dev/null: once the daemon is gone its pipes have no reader,
                    # and the shell's "Terminated" notice would die of SIGPIPE first.
                    script = (f"exec >/dev/null 2>&1; trap 'touch {marker}; {then}' TERM; "
                              "while :; do sleep 0.05; done")  # fmt: skip
                    call = stub.Start(start_request(["sh", "-c", script], detach=True))
                    assert (await call.read()).event.WhichOneof("event") == "started"
                    call.cancel()

        asyncio.run(start())
        time.sleep(0.3)
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)
    assert polite.exists()
    assert stubborn.exists()
