"""exec_command / write_stdin sessions with scripted processes (spec 05 §3): yields, polls,
quick exits, spawn failures. The process waits at a `Gate` the test opens, not on a clock.
Real processes for the same runtime (a tty's echo and ^D, ^C as SIGINT):
tests/integration/test_runtime_unified.py."""

from __future__ import annotations

import asyncio
import errno
import re
from pathlib import Path

from shellgate.router.runtime.call.events import (
    StartedEvent,
    TerminalInteractionEvent,
    Termination,
)

from tests.integration.runtime_support import Harness, completed, normalise
from tests.scripted_spawner import Gate, Out, Script, ScriptedSpawner, prints
from tests.waiting import eventually_async


def test_exec_yields_then_write_stdin_polls_until_exit(tmp_path: Path) -> None:
    command = "echo first; sleep 2; echo second"

    async def main() -> None:
        gate = Gate()
        spawner = ScriptedSpawner({command: Script((Out(b"first\n"), gate, Out(b"second\n")))})
        async with Harness(tmp_path, spawner=spawner) as h:
            events = await h.run("exec_command", {"cmd": command, "yield_time_ms": 1000})
            started = [e for e in events if isinstance(e, StartedEvent)]
            assert started and started[0].session_id == 1000
            done = completed(events)
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\n"
                "Process running with session ID N\nOriginal token count: 2\n"
                "Output:\nfirst\n"
            )
            assert done.session_id == 1000 and done.termination is Termination.YIELDED
            assert done.success and done.exit_code is None
            # The yield was waited out (the process cannot exit before the gate opens).
            wall = float(re.search(r"Wall time: ([0-9.]+)", done.output_text)[1])  # type: ignore[index]
            assert wall >= 0.9
            # An empty poll waits up to 5 s but returns as soon as the process exits: it
            # exits while the poll waits.
            poll_task = asyncio.create_task(h.run("write_stdin", {"session_id": 1000}, "call-2"))
            await eventually_async(
                lambda: "call-2" in h.thread.inflight, "the poll in flight", interval_s=0.005
            )
            gate.open()
            poll = await poll_task
            done = completed(poll)
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\n"
                "Original token count: 2\nOutput:\nsecond\n"
            )
            assert done.termination is Termination.EXITED and done.session_id is None
            assert any(isinstance(e, TerminalInteractionEvent) for e in poll) is False
            # Once the exit was reported the id is gone.
            gone = completed(await h.run("write_stdin", {"session_id": 1000}, "call-3"))
            assert gone.output_text == "write_stdin failed: Unknown process id 1000"
            assert gone.termination is Termination.TOOL_ERROR

    asyncio.run(main())


def test_quick_command_exits_in_first_response(tmp_path: Path) -> None:
    async def main() -> None:
        spawner = ScriptedSpawner(
            {"printf 'no newline'": prints("no newline"), "exit 3": prints(exit_code=3)}
        )
        async with Harness(tmp_path, spawner=spawner) as h:
            done = completed(await h.run("exec_command", {"cmd": "printf 'no newline'"}))
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\n"
                "Original token count: 3\nOutput:\nno newline"
            )
            done = completed(await h.run("exec_command", {"cmd": "exit 3"}, "c2"))
            assert done.output_text.endswith(
                "Process exited with code 3\nOriginal token count: 0\nOutput:\n"
            )
            assert done.success  # unified results are successful even for non-zero exits
            assert len(h.thread.sessions) == 0

    asyncio.run(main())


def test_spawn_failure_text_for_missing_cwd(tmp_path: Path) -> None:
    async def main() -> None:
        # What the local backend raises for a missing cwd (the real one: the classic twin in
        # tests/integration/test_runtime_classic.py).
        spawner = ScriptedSpawner({"true": Script(spawn_errno=errno.ENOENT)})
        async with Harness(tmp_path, spawner=spawner) as h:
            done = completed(await h.run("exec_command", {"cmd": "true", "workdir": "nope"}))
            assert done.output_text == (
                'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create '
                'unified exec process: No such file or directory (os error 2)\\")" }'
            )
            assert done.termination is Termination.SPAWN_FAILED
            assert len(h.thread.sessions) == 0
        assert [r.request.cwd for r in spawner.spawned] == [str(tmp_path / "nope")]

    asyncio.run(main())
