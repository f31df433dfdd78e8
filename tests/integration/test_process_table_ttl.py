"""The process table's owner TTL and exited retention follow its injected clock, on real
processes (moved from tests/unit/test_execserver_retention.py: it spawns); a detached
session's capture and exit outlive the exited retention until a drain took them."""

from __future__ import annotations

import asyncio
import os

from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.local import LocalBackend
from shellgate.execserver.config import ProcessLimits
from shellgate.execserver.process_table import ProcessTable, StartSpec, TableLimits

from tests.waiting import eventually_async


def _table(now: list[float], owner_ttl_ms: int) -> ProcessTable:
    """A real table on this host, 30 s exited retention, its clock `now[0]`."""
    return ProcessTable(
        LocalBackend(ProcessLimits(kill_grace_ms=200)),
        TableLimits(exited_retention_ms=30_000, owner_ttl_ms=owner_ttl_ms),
        clock=lambda: now[0],
    )


def test_owner_ttl_and_exited_retention_follow_the_injected_clock() -> None:
    now = [1000.0]

    async def main() -> None:
        table = _table(now, owner_ttl_ms=60_000)
        env = dict(os.environ)

        def spec(argv: tuple[str, ...], detach: bool) -> StartSpec:
            return StartSpec(
                "c", "o", SpawnRequest(argv, "/tmp", env), detach, None, None, None, False
            )

        sleeper, _ = await table.start(spec(("sleep", "30"), True))
        quick, _ = await table.start(spec(("true",), False))
        await eventually_async(lambda: quick.closed, "`true` closed", interval_s=0.02)
        now[0] += 29
        await table.sweep()
        assert {p.process_id for p in table.list("c")} == {sleeper.process_id, quick.process_id}
        now[0] += 2
        await table.sweep()
        assert [p.process_id for p in table.list("c")] == [sleeper.process_id]
        now[0] += 60
        await table.sweep()
        assert table.list("c") == [] and sleeper.exited
        await table.shutdown()

    asyncio.run(main())


def test_a_session_reports_its_exit_and_last_output_a_minute_after_it_exited() -> None:
    now = [1000.0]

    async def main() -> None:
        table = _table(now, owner_ttl_ms=600_000)
        request = SpawnRequest(("sh", "-c", "echo last words; exit 7"), "/tmp", dict(os.environ))
        session, _ = await table.start(StartSpec("c", "o", request, True, None, None, None, False))
        await eventually_async(lambda: session.closed, "the session closed", interval_s=0.02)
        # 60 s after the exit, twice the exited retention: still there, exit and output kept.
        now[0] += 60
        await table.sweep()
        assert table.get("c", session.process_id) is session
        drained = session.drain_capture()
        assert drained is not None and drained.closed
        assert drained.snapshot.to_bytes() == b"last words\n"
        status = session.exit_status()
        assert status is not None and status.code == 7
        # Reported: from that drain on it is any closed process, gone after the retention.
        assert session.drain_capture().snapshot.to_bytes() == b""  # type: ignore[union-attr]
        now[0] += 29
        await table.sweep()
        assert table.list("c") == [session]
        now[0] += 2
        await table.sweep()
        assert table.list("c") == []
        await table.shutdown()

    asyncio.run(main())


def test_an_undrained_session_goes_at_its_owner_ttl_renewed_by_use() -> None:
    now = [1000.0]

    async def main() -> None:
        table = _table(now, owner_ttl_ms=60_000)
        request = SpawnRequest(("true",), "/tmp", dict(os.environ))
        session, _ = await table.start(StartSpec("c", "o", request, True, None, None, None, False))
        await eventually_async(lambda: session.closed, "the session closed", interval_s=0.02)
        now[0] += 50
        session.touch()  # a router's status check (Read) while the thread lives
        now[0] += 50
        await table.sweep()
        assert table.list("c") == [session]
        now[0] += 11
        await table.sweep()
        assert table.list("c") == []
        await table.shutdown()

    asyncio.run(main())


def test_a_released_or_terminated_session_keeps_only_the_exited_retention() -> None:
    now = [1000.0]

    async def main() -> None:
        table = _table(now, owner_ttl_ms=600_000)
        env = dict(os.environ)

        def session(argv: tuple[str, ...]) -> StartSpec:
            return StartSpec(
                "c", "o", SpawnRequest(argv, "/tmp", env), True, None, None, None, False
            )

        # Its exit reported before the close (a grandchild held the pipe): released.
        released, _ = await table.start(session(("sh", "-c", "echo out; sleep 0.3")))
        killed, _ = await table.start(session(("sleep", "30")))
        assert released.drain_capture(release=True) is not None
        assert await killed.terminate()
        await eventually_async(lambda: released.closed and killed.closed, "both closed",
                               interval_s=0.02)  # fmt: skip
        now[0] += 31
        await table.sweep()
        assert table.list("c") == []
        await table.shutdown()

    asyncio.run(main())
