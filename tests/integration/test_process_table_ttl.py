"""The process table's owner TTL and exited retention follow its injected clock, on real
processes (moved from tests/unit/test_execserver_retention.py: it spawns)."""

from __future__ import annotations

import asyncio
import os

from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.local import LocalBackend
from shellgate.execserver.config import ProcessLimits
from shellgate.execserver.process_table import ProcessTable, StartSpec, TableLimits

from tests.waiting import eventually_async


def test_owner_ttl_and_exited_retention_follow_the_injected_clock() -> None:
    now = [1000.0]

    async def main() -> None:
        table = ProcessTable(
            LocalBackend(ProcessLimits(kill_grace_ms=200)),
            TableLimits(exited_retention_ms=30_000, owner_ttl_ms=60_000),
            clock=lambda: now[0],
        )
        env = dict(os.environ)

        def spec(argv: tuple[str, ...]) -> StartSpec:
            return StartSpec(
                "c", "o", SpawnRequest(argv, "/tmp", env), True, None, None, None, False
            )

        sleeper, _ = await table.start(spec(("sleep", "30")))
        quick, _ = await table.start(spec(("true",)))
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
