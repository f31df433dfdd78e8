"""Classic shell_command through the orchestrator, with real processes (spec 05 §1)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from shellgate.router.output.truncation import TruncationPolicy
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


def test_nonzero_exit_and_call_id_env(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            events = await h.run(
                "shell_command", {"command": 'echo "$CODEX_TOOL_CALL_ID"; exit 3'}, "c-77"
            )
            done = completed(events)
            assert normalise(done.output_text) == (
                "Exit code: 3\nWall time: W seconds\nOutput:\nc-77\n"
            )
            assert not done.success and done.exit_code == 3

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


def test_truncation_uses_turn_policy(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path, truncation=TruncationPolicy.tokens(5)) as h:
            done = completed(await h.run("shell_command", {"command": "seq 1 10"}))
            # spec 05 §2 (B = 5 tokens, 20 bytes): 10-byte halves; a cut that keeps the
            # line count adds no `Total output lines`.
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nOutput:\n"
                "1\n2\n3\n4\n5\n…1 tokens truncated…\n7\n8\n9\n10\n"
            )
            assert done.truncated and done.original_token_count == 6
            done = completed(await h.run("shell_command", {"command": "seq 1 100"}))
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nTotal output lines: 100\nOutput:\n"
                "1\n2\n3\n4\n5\n…68 tokens truncated…98\n99\n100\n"
            )

    _run(main())


def test_batch_stops_at_first_failure(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            cmds = ["echo one", "echo two; exit 2", "echo three", "echo \"fo\u00fcr\""]
            done = completed(await h.run("shell_command", {"command": cmds}))
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nOutput:\none\n\n"
                "Exit code: 2\nWall time: W seconds\nOutput:\ntwo\n\n"
                'Commands not run: ["echo three", "echo \\"fo\u00fcr\\""]'
            )
            assert not done.success and done.exit_code == 2
            assert not (tmp_path / "three").exists()

    _run(main())


def test_spawn_failure_missing_cwd(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            done = completed(await h.run("shell_command", {"command": "true", "workdir": "nope"}))
            assert done.output_text == (
                'execution error: Io(Os { code: 2, kind: NotFound, message: '
                '"No such file or directory" })'
            )
            assert done.termination is Termination.SPAWN_FAILED and not done.success

    _run(main())
