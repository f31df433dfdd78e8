"""Pruning past 64 sessions and apply_patch, with scripted processes (spec 05 §3.5). Real
processes for interrupts, cancelled streams and thread end (the process group must die):
tests/integration/test_runtime_lifecycle.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from shellgate.router.output.unified_rules import process_id_to_prune, process_limit_warning
from shellgate.router.pipeline import project
from shellgate.router.runtime.call.execute import execute_call

from tests.integration.runtime_support import Harness, completed
from tests.scripted_spawner import Gate, Script, ScriptedProcess, ScriptedSpawner, hangs
from tests.waiting import eventually_async


def test_pruning_at_64_sessions_protects_recent(tmp_path: Path) -> None:
    async def main() -> None:
        # The oldest session exits on its own (when the test opens its gate), never polled.
        ends = Gate()
        spawner = ScriptedSpawner({"sleep 2": Script((ends,)), "sleep 30": hangs()})
        async with Harness(tmp_path, spawner=spawner) as h:
            sessions = h.thread.sessions
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
            assert oldest is not None and not oldest.exited
            ends.open()
            await eventually_async(lambda: oldest.exited, "the oldest session's exit")
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
            victim_handle = victim_proc.handle
            assert isinstance(victim_handle, ScriptedProcess)
            completed(await h.run("exec_command", {"cmd": "sleep 30", "yield_time_ms": 250},
                                  "c65"))  # fmt: skip
            assert sessions.get(victim) is None
            assert all(sessions.get(u.process_id) is not None for u in recent)
            # The pruned session's process was ended (terminated, not left running).
            await eventually_async(lambda: victim_handle.exited, "the victim's process ended")
            polled = completed(await h.run("write_stdin", {"session_id": victim}, "c66"))
            assert polled.output_text == f"write_stdin failed: Unknown process id {victim}"

    asyncio.run(main())


PATCH = "*** Begin Patch\n*** Add File: x.txt\n+hello\n*** End Patch\n"


def test_apply_patch_intercepted_and_custom_tool(tmp_path: Path) -> None:
    async def main() -> None:
        # Intercepted patches are applied by the router: no process is started.
        spawner = ScriptedSpawner({})
        async with Harness(tmp_path, spawner=spawner) as h:
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
                               "call_id": "c3", "input": PATCH.replace("x.txt", "y.txt")})  # fmt: skip
            turn = h.turn()
            events = [e async for e in execute_call(project(item, turn, h.host()), turn, h.ctx)]
            done = completed(events)
            assert done.output_text == (
                "Exit code: 0\nWall time: 0 seconds\nOutput:\n"
                "Success. Updated the following files:\nA y.txt\n"
            )
            assert done.output_item_json.startswith('{"type":"custom_tool_call_output"')
        assert spawner.commands == []

    asyncio.run(main())
