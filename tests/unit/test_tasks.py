"""Task ownership helpers: teardown cancels and awaits, failures are seen, cancellation propagates."""

from __future__ import annotations

import asyncio
import logging

import pytest
from shellgate.common.tasks import TaskSet, cancel_and_wait


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fail(message: str) -> None:
    await asyncio.sleep(0)
    raise ValueError(message)


def test_cancel_and_wait_ends_every_task_and_logs_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        stopped: list[str] = []

        async def cleanup_on_cancel(name: str) -> None:
            try:
                await _forever()
            finally:
                await asyncio.sleep(0)  # teardown that itself awaits
                stopped.append(name)

        a = asyncio.create_task(cleanup_on_cancel("a"))
        b = asyncio.create_task(cleanup_on_cancel("b"))
        failed = asyncio.create_task(_fail("boom"), name="failing")
        await asyncio.sleep(0.01)
        await cancel_and_wait(a, None, b, failed)
        assert a.cancelled() and b.cancelled() and sorted(stopped) == ["a", "b"]
        await cancel_and_wait()  # nothing to do

    with caplog.at_level(logging.ERROR, logger="shellgate.common.tasks"):
        asyncio.run(main())
    assert [r.getMessage() for r in caplog.records] == ["task failing failed"]


def test_cancel_and_wait_never_swallows_its_callers_cancellation() -> None:
    async def main() -> None:
        async def slow_to_stop() -> None:
            try:
                await _forever()
            finally:
                await asyncio.sleep(0.5)

        child = asyncio.create_task(slow_to_stop())
        await asyncio.sleep(0)
        owner = asyncio.create_task(cancel_and_wait(child))
        await asyncio.sleep(0.01)
        owner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await owner
        # The child was told to stop before the owner gave up waiting.
        await asyncio.wait([child])
        assert child.cancelled()

    asyncio.run(main())


def test_task_set_logs_a_failure_when_it_happens_and_join_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        tasks = TaskSet(logging.getLogger("owner"))
        done: list[int] = []

        async def work(n: int) -> None:
            await asyncio.sleep(0.01 * n)
            done.append(n)
            if n == 1:
                tasks.spawn(work(3), name="late")  # spawned while join waits

        tasks.spawn(work(1), name="w1")
        tasks.spawn(_fail("bad"), name="bad")
        await asyncio.sleep(0.005)
        assert [r.getMessage() for r in caplog.records] == ["task bad failed"]
        assert caplog.records[0].name == "owner"
        await tasks.join()
        assert done == [1, 3] and len(tasks) == 0

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())


def test_task_set_aclose_cancels_what_is_left() -> None:
    async def main() -> None:
        tasks = TaskSet()
        forever = tasks.spawn(_forever(), name="forever")
        assert len(tasks) == 1
        await tasks.aclose()
        assert forever.cancelled() and len(tasks) == 0

    asyncio.run(main())
