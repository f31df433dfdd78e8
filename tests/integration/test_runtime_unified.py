"""exec_command / write_stdin sessions with real processes (spec 05 §3)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from shellgate.router.runtime.call.events import (
    StartedEvent,
    TerminalInteractionEvent,
    Termination,
)

from tests.integration.runtime_support import Harness, completed, normalise


def test_exec_yields_then_write_stdin_polls_until_exit(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            events = await h.run(
                "exec_command",
                {"cmd": "echo first; sleep 2; echo second", "yield_time_ms": 1000},
            )
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
            wall = float(re.search(r"Wall time: ([0-9.]+)", done.output_text)[1])  # type: ignore[index]
            assert 0.9 <= wall < 2.0
            # An empty poll waits up to 5 s but returns as soon as the process exits.
            poll = await h.run("write_stdin", {"session_id": 1000}, "call-2")
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
        async with Harness(tmp_path) as h:
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


def test_tty_cat_echo_then_ctrl_d_exits(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            done = completed(
                await h.run("exec_command", {"cmd": "cat", "tty": True, "yield_time_ms": 300})
            )
            assert done.session_id == 1000
            events = await h.run(
                "write_stdin", {"session_id": 1000, "chars": "hello\n", "yield_time_ms": 1000}, "c2"
            )
            done = completed(events)
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\n"
                "Process running with session ID N\nOriginal token count: 4\n"
                "Output:\nhello\r\nhello\r\n"
            )
            assert [e.stdin for e in events if isinstance(e, TerminalInteractionEvent)] == [
                "hello\n"
            ]
            done = completed(
                await h.run("write_stdin", {"session_id": 1000, "chars": "\u0004"}, "c3")
            )
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\n"
                "Original token count: 0\nOutput:\n"
            )

    asyncio.run(main())


def test_pipe_ctrl_c_is_sigint_exit_130(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            done = completed(await h.run("exec_command", {"cmd": "sleep 30", "yield_time_ms": 250}))
            sid = done.session_id
            closed = completed(await h.run("write_stdin", {"session_id": sid, "chars": "x"}, "c2"))
            assert closed.output_text == (
                "write_stdin failed: stdin is closed for this session; rerun exec_command "
                "with tty=true to keep stdin open"
            )
            done = completed(
                # A generous yield: collection stops as soon as the process exits, and a
                # loaded box may need more than the default 250 ms to deliver the signal.
                await h.run(
                    "write_stdin",
                    {"session_id": sid, "chars": "\u0003", "yield_time_ms": 5_000},
                    "c3",
                )
            )
            assert "Process exited with code 130\n" in done.output_text
            assert done.exit_code == 130 and done.termination is Termination.SIGNALED

    asyncio.run(main())


def test_spawn_failure_text_for_missing_cwd(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path) as h:
            done = completed(await h.run("exec_command", {"cmd": "true", "workdir": "nope"}))
            assert done.output_text == (
                'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create '
                'unified exec process: No such file or directory (os error 2)\\")" }'
            )
            assert done.termination is Termination.SPAWN_FAILED
            assert len(h.thread.sessions) == 0

    asyncio.run(main())
