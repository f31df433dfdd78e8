"""exec_command / write_stdin sessions with real processes (spec 05 §3): a tty's echo and
^D, ^C on pipes as SIGINT. Yields, polls, quick exits and spawn failures with scripted
processes: tests/unit/test_runtime_unified_scripted.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shellgate.router.runtime.call.events import (
    TerminalInteractionEvent,
    Termination,
)

from tests.integration.runtime_support import Harness, completed, normalise


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
