"""Interrupts, pruning past 64 sessions, apply_patch, thread end (spec 05 §3.5, 06 §2, §4)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

from shellgate.router.output.unified_rules import process_id_to_prune, process_limit_warning
from shellgate.router.pipeline import project
from shellgate.router.runtime.call.events import CompletedEvent, StartedEvent, Termination
from shellgate.router.runtime.call.execute import execute_call

from tests.integration.runtime_support import Harness, call_item, completed, normalise
from tests.proc_scan import alive


async def _interrupt_after_start(h: Harness, name: str, args: dict[str, object]) -> list[object]:
    task = asyncio.create_task(h.run(name, args))
    for _ in range(200):
        await asyncio.sleep(0.02)
        if "call-1" in h.thread.inflight:
            break
    await asyncio.sleep(0.3)
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


def test_cancelled_stream_kills_classic(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            seen: list[object] = []

            async def consume() -> None:
                async for event in h_stream(h):
                    seen.append(event)

            task = asyncio.create_task(consume())
            for _ in range(200):
                await asyncio.sleep(0.02)
                if any(isinstance(e, StartedEvent) for e in seen):
                    break
            started = next(e for e in seen if isinstance(e, StartedEvent))
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert not any(isinstance(e, CompletedEvent) for e in seen)
            assert started.pid is not None
            for _ in range(100):
                if not alive(started.pid):
                    break
                await asyncio.sleep(0.05)
            assert not alive(started.pid)
            assert "call-1" not in h.thread.inflight

    asyncio.run(main())


def h_stream(h: Harness):  # type: ignore[no-untyped-def]
    turn = h.turn()
    item = call_item("shell_command", {"command": "sleep 30", "login": False})
    return execute_call(project(item, turn, h.host()), turn, h.ctx)


def test_pruning_at_64_sessions_protects_recent(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            sessions = h.thread.sessions
            # The oldest session exits on its own and is never polled.
            first = completed(await h.run("exec_command", {"cmd": "sleep 2",
                                                           "yield_time_ms": 250}))  # fmt: skip
            exited_id = first.session_id
            assert exited_id is not None
            calls = [
                h.run("exec_command", {"cmd": "sleep 30", "yield_time_ms": 250}, f"c{i}")
                for i in range(63)
            ]
            results = [completed(evs) for evs in await asyncio.gather(*calls)]
            assert len(sessions) == 64
            assert any(r.model_warnings for r in results)
            oldest = sessions.get(exited_id)
            assert oldest is not None
            for _ in range(200):
                if oldest.exited:
                    break
                await asyncio.sleep(0.05)
            assert oldest.exited
            usage = sessions.usage()
            assert process_id_to_prune(usage) == exited_id
            done = completed(await h.run("exec_command", {"cmd": "sleep 30",
                                                          "yield_time_ms": 250}, "c64"))  # fmt: skip
            assert len(sessions) == 64 and sessions.get(exited_id) is None
            assert done.model_warnings == (process_limit_warning(64),)
            # None exited now: the least recently used outside the 8 most recent goes.
            usage = sessions.usage()
            recent = sorted(usage, key=lambda u: u.last_used, reverse=True)[:8]
            victim = process_id_to_prune(usage)
            assert victim is not None and victim not in {u.process_id for u in recent}
            victim_proc = sessions.get(victim)
            assert victim_proc is not None
            victim_pid = victim_proc.handle.pid
            completed(await h.run("exec_command", {"cmd": "sleep 30", "yield_time_ms": 250},
                                  "c65"))  # fmt: skip
            assert sessions.get(victim) is None
            assert all(sessions.get(u.process_id) is not None for u in recent)
            for _ in range(100):
                if not os.path.exists(f"/proc/{victim_pid}"):
                    break
                await asyncio.sleep(0.05)
            assert not os.path.exists(f"/proc/{victim_pid}")
            polled = completed(await h.run("write_stdin", {"session_id": victim}, "c66"))
            assert polled.output_text == f"write_stdin failed: Unknown process id {victim}"

    asyncio.run(main())


PATCH = "*** Begin Patch\n*** Add File: x.txt\n+hello\n*** End Patch\n"


def test_apply_patch_intercepted_and_custom_tool(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            script = f"apply_patch <<'EOF'\n{PATCH}EOF\n"
            done = completed(await h.run("exec_command", {"cmd": script}))
            assert done.output_text == (
                "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\n"
                "Output:\nSuccess. Updated the following files:\nA x.txt\n"
            )
            assert (tmp_path / "x.txt").read_text() == "hello\n"
            bad = "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n"
            bad_script = f"apply_patch <<'EOF'\n{bad}EOF\n"
            done = completed(await h.run("shell_command", {"command": bad_script}, "c2"))
            assert done.output_text.startswith("apply_patch verification failed: ")
            assert not done.success
            # The freeform custom tool.
            item = json.dumps({"type": "custom_tool_call", "name": "apply_patch",
                               "call_id": "c3", "input": PATCH.replace("x.txt", "y.txt")})
            turn = h.turn()
            events = [e async for e in execute_call(project(item, turn, h.host()), turn, h.ctx)]
            done = completed(events)
            assert done.output_text == (
                "Exit code: 0\nWall time: 0 seconds\nOutput:\n"
                "Success. Updated the following files:\nA y.txt\n"
            )
            assert done.output_item_json.startswith('{"type":"custom_tool_call_output"')

    asyncio.run(main())
