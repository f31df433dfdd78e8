"""Classic shell_command through the orchestrator with scripted processes (spec 05 §1): the
runtime's texts and decisions, no bash. Real processes for the same runtime (output, the
timeout's group kill, a missing cwd): tests/integration/test_runtime_classic.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shellgate.common.process.base import SpawnRequest
from shellgate.common.sandbox import SandboxSpec
from shellgate.router.output.truncation import TruncationPolicy

from tests.integration.runtime_support import Harness, completed, normalise
from tests.scripted_spawner import Script, ScriptedSpawner, prints


def test_nonzero_exit_and_call_id_env(tmp_path: Path) -> None:
    command = 'echo "$CODEX_TOOL_CALL_ID"; exit 3'

    def echo_call_id(request: SpawnRequest, _sandbox: SandboxSpec) -> Script:
        return prints(request.env["CODEX_TOOL_CALL_ID"] + "\n", exit_code=3)

    async def main() -> None:
        async with Harness(tmp_path, spawner=ScriptedSpawner({command: echo_call_id})) as h:
            done = completed(await h.run("shell_command", {"command": command}, "c-77"))
            assert normalise(done.output_text) == (
                "Exit code: 3\nWall time: W seconds\nOutput:\nc-77\n"
            )
            assert not done.success and done.exit_code == 3

    asyncio.run(main())


def test_truncation_uses_turn_policy(tmp_path: Path) -> None:
    seq = {f"seq 1 {n}": prints("".join(f"{i}\n" for i in range(1, n + 1))) for n in (10, 100)}

    async def main() -> None:
        spawner = ScriptedSpawner(seq)
        async with Harness(tmp_path, truncation=TruncationPolicy.tokens(5), spawner=spawner) as h:
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

    asyncio.run(main())


def test_batch_stops_at_first_failure(tmp_path: Path) -> None:
    cmds = ["echo one", "echo two; exit 2", "echo three", 'echo "fo\u00fcr"']
    scripts = {cmds[0]: prints("one\n"), cmds[1]: prints("two\n", exit_code=2)}

    async def main() -> None:
        spawner = ScriptedSpawner(scripts)
        async with Harness(tmp_path, spawner=spawner) as h:
            done = completed(await h.run("shell_command", {"command": cmds}))
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nOutput:\none\n\n"
                "Exit code: 2\nWall time: W seconds\nOutput:\ntwo\n\n"
                'Commands not run: ["echo three", "echo \\"fo\u00fcr\\""]'
            )
            assert not done.success and done.exit_code == 2
        # The elements after the failure were never started.
        assert spawner.commands == cmds[:2]

    asyncio.run(main())
