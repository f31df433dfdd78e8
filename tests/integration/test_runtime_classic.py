"""Classic shell_command through the orchestrator, with real processes (spec 05 §1): output,
the timeout's group kill, a missing cwd. The runtime's texts and decisions with scripted
processes: tests/unit/test_runtime_classic_scripted.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from shellgate.router.runtime.call.events import (
    OutputEvent,
    ProjectionEvent,
    StartedEvent,
    Termination,
)

from tests.integration.runtime_support import Harness, completed, normalise


def _run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_success_text_item_and_events(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            events = await h.run("shell_command", {"command": "echo hello; echo oops >&2"})
            assert isinstance(events[0], ProjectionEvent)
            assert any(isinstance(e, StartedEvent) for e in events)
            outs = [e for e in events if isinstance(e, OutputEvent)]
            assert [e.seq for e in outs] == list(range(1, len(outs) + 1))
            done = completed(events)
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nOutput:\nhello\noops\n"
            )
            assert done.success and done.exit_code == 0
            assert done.termination is Termination.EXITED
            item = json.loads(done.output_item_json)
            assert item == {"type": "function_call_output", "call_id": "call-1",
                            "output": done.output_text}  # fmt: skip
            assert list(item) == ["type", "call_id", "output"]

    _run(main())


def test_timeout_kills_group_exit_124(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            events = await h.run(
                "shell_command", {"command": "echo partial; sleep 30 & wait", "timeout_ms": 400}
            )
            done = completed(events)
            lines = done.output_text.split("\n")
            assert lines[0] == "Exit code: 124"
            assert lines[2] == "Output:"
            assert lines[3].startswith("command timed out after ")
            assert lines[3].endswith(" milliseconds")
            measured = int(lines[3].split()[4])
            assert 400 <= measured < 3000
            assert lines[4:] == ["partial", ""]
            assert done.termination is Termination.TIMED_OUT and not done.success

    _run(main())


def test_spawn_failure_missing_cwd(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            done = completed(await h.run("shell_command", {"command": "true", "workdir": "nope"}))
            assert done.output_text == (
                "execution error: Io(Os { code: 2, kind: NotFound, message: "
                '"No such file or directory" })'
            )
            assert done.termination is Termination.SPAWN_FAILED and not done.success

    _run(main())
