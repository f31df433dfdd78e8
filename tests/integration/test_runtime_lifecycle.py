"""Interrupts, cancelled streams and thread end kill real process groups (spec 05 §3.5, 06
§2, §4). Pruning past 64 sessions and apply_patch with scripted processes:
tests/unit/test_runtime_lifecycle_scripted.py."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from shellgate.router.pipeline import project
from shellgate.router.runtime.call.events import CompletedEvent, StartedEvent, Termination
from shellgate.router.runtime.call.execute import execute_call

from tests.integration.runtime_support import Harness, call_item, normalise
from tests.proc_scan import alive
from tests.waiting import eventually_async


async def _interrupt_after_start(h: Harness, name: str, args: dict[str, object]) -> list[object]:
    task = asyncio.create_task(h.run(name, args))
    with contextlib.suppress(AssertionError):  # as before: interrupted after 4 s either way
        await eventually_async(lambda: "call-1" in h.thread.inflight, "the call in flight", 4, 0.02)
    await asyncio.sleep(0.3)  # its process spawned
    h.thread.interrupt("call-1")
    return list(await asyncio.wait_for(task, 10))


def test_interrupt_kills_classic_keeps_unified(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            events = await _interrupt_after_start(h, "shell_command", {"command": "sleep 30"})
            done = events[-1]
            assert isinstance(done, CompletedEvent)
            assert normalise(done.output_text) == "Wall time: W seconds\naborted by user"
            assert done.termination is Termination.CANCELLED
            started = next(e for e in events if isinstance(e, StartedEvent))
            assert started.pid is not None and not alive(started.pid)
            events = await _interrupt_after_start(
                h, "exec_command", {"cmd": "sleep 30", "yield_time_ms": 20_000}
            )
            done = events[-1]
            assert isinstance(done, CompletedEvent)
            assert done.output_text.startswith("aborted by user after ")
            assert done.output_text.endswith("s")
            assert done.session_id == 1000 and done.termination is Termination.CANCELLED
            proc = h.thread.sessions.get(1000)
            assert proc is not None and not proc.exited
            ended = await h.threads.end("t-1")
            assert ended.terminated_sessions == 1

    asyncio.run(main())


def test_a_thread_ended_while_its_exec_command_starts_leaves_no_process(
    tmp_path: Path,
) -> None:
    # EndThread as soon as the call is in flight: it lands while the session is spawned or
    # in its 150 ms early-exit check, before it is stored. That process must go with the
    # thread (it used to be stored into the ended thread, out of everyone's reach).
    async def main() -> None:
        async with Harness(tmp_path) as h:
            thread = h.thread
            task = asyncio.create_task(
                h.run("exec_command", {"cmd": "sleep 30", "yield_time_ms": 20_000})
            )
            await eventually_async(lambda: "call-1" in thread.inflight, "in flight", 4, 0.005)
            await h.threads.end("t-1")
            events = await asyncio.wait_for(task, 10)
            done = events[-1]
            assert isinstance(done, CompletedEvent)
            started = next(e for e in events if isinstance(e, StartedEvent))
            assert started.pid is not None and not alive(started.pid)
            assert done.session_id is None  # nothing left to poll
            assert len(thread.sessions) == 0

    for _ in range(5):  # each window (spawn, early-exit check) gets its chances
        asyncio.run(main())


def test_cancelled_stream_kills_classic(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            seen: list[object] = []

            async def consume() -> None:
                async for event in h_stream(h):
                    seen.append(event)

            task = asyncio.create_task(consume())
            started = await eventually_async(
                lambda: next((e for e in seen if isinstance(e, StartedEvent)), None),
                "the started event",
                4,
                0.02,
            )
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert not any(isinstance(e, CompletedEvent) for e in seen)
            assert started.pid is not None
            await eventually_async(lambda: not alive(started.pid), "the process killed", 5)
            assert "call-1" not in h.thread.inflight

    asyncio.run(main())


def h_stream(h: Harness):  # type: ignore[no-untyped-def]
    turn = h.turn()
    item = call_item("shell_command", {"command": "sleep 30", "login": False})
    return execute_call(project(item, turn, h.host()), turn, h.ctx)


PATCH = "*** Begin Patch\n*** Add File: x.txt\n+hello\n*** End Patch\n"
