"""Approvals with scripted processes: amendments, denial and abort, batch resume, forbidden,
the sandbox-denial retry, apply_patch (spec 02 §6.4, 06 §3). What ran is the spawner's record,
so "nothing ran" and "ran once" are exact. Real processes for the same runtime (the round
trip and session cache, a real bubblewrap denial): tests/integration/test_runtime_approvals.py."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

from shellgate.common.sandbox import SandboxMode
from shellgate.router.pipeline import project
from shellgate.router.policy import SandboxProfile
from shellgate.router.runtime.call.events import (
    ApprovalDecision,
    ApprovalKind,
    StartedEvent,
    Termination,
)
from shellgate.router.runtime.call.execute import execute_call

from tests.integration.runtime_support import Harness, approval, completed, normalise
from tests.scripted_spawner import SANDBOX_DENIED_TEXT, ScriptedSpawner, denied_in_sandbox, prints

PROMPT_TOUCH = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
FORBID_RM = 'prefix_rule(pattern=["rm"], decision="forbidden")\n'


def test_amendment_appends_rule_and_reloads(tmp_path: Path) -> None:
    async def main() -> None:
        spawner = ScriptedSpawner({"touch c": prints(), "touch d": prints()})
        async with Harness(tmp_path, approval="untrusted", spawner=spawner) as h:
            args = {"command": "touch c", "prefix_rule": ["touch"]}
            ask = approval(await h.run("shell_command", args))
            assert ask.proposed_amendment == ("touch",)
            assert ApprovalDecision.APPROVED_WITH_AMENDMENT in ask.available_decisions
            assert spawner.commands == []
            done = completed(
                await h.resume(ask.approval_id, ApprovalDecision.APPROVED_WITH_AMENDMENT)
            )
            assert done.success and spawner.commands == ["touch c"]
            rules = (tmp_path / "rules" / "default.rules").read_text()
            assert 'prefix_rule(pattern=["touch"], decision="allow")' in rules
            # The reloaded policy now allows it without asking.
            done = completed(await h.run("shell_command", {"command": "touch d"}, "call-2"))
            assert done.success and spawner.commands == ["touch c", "touch d"]

    asyncio.run(main())


def test_exec_command_denied_and_abort(tmp_path: Path) -> None:
    async def main() -> None:
        spawner = ScriptedSpawner({})
        async with Harness(
            tmp_path, approval="on-request", rules=PROMPT_TOUCH, spawner=spawner
        ) as h:
            ask = approval(await h.run("exec_command", {"cmd": "touch e"}))
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.DENIED))
            assert done.output_text == (
                'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'
            )
            ask = approval(await h.run("shell_command", {"command": "touch f"}, "call-2"))
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.ABORT))
            assert normalise(done.output_text) == "Wall time: W seconds\naborted by user"
            assert done.termination is Termination.CANCELLED
        assert spawner.commands == []

    asyncio.run(main())


def test_batch_resume_never_reruns_an_element(tmp_path: Path) -> None:
    cmds = ["echo one >> log.txt", "touch x", "echo three >> log.txt"]

    async def main() -> None:
        spawner = ScriptedSpawner({cmd: prints() for cmd in cmds})
        async with Harness(
            tmp_path, approval="on-request", rules=PROMPT_TOUCH, spawner=spawner
        ) as h:
            ask = approval(await h.run("shell_command", {"command": cmds}))
            assert ask.element_index == 1
            assert spawner.commands == cmds[:1]
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED))
            # The resume starts at the parked element: the first one never runs twice.
            assert spawner.commands == cmds
            assert normalise(done.output_text) == (
                "Exit code: 0\nWall time: W seconds\nOutput:\n\n"
                "Exit code: 0\nWall time: W seconds\nOutput:\n\n"
                "Exit code: 0\nWall time: W seconds\nOutput:\n"
            )
            assert done.success

    asyncio.run(main())


def test_forbidden_runs_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        spawner = ScriptedSpawner({})
        async with Harness(tmp_path, approval="on-request", rules=FORBID_RM, spawner=spawner) as h:
            events = await h.run("shell_command", {"command": "rm -rf keep"})
            done = completed(events)
            assert done.output_text == (
                "`/bin/bash -c 'rm -rf keep'` rejected: policy forbids commands starting with `rm`"
            )
            assert done.termination is Termination.FORBIDDEN and not done.success
            assert not any(isinstance(e, StartedEvent) for e in events)
            done = completed(await h.run("exec_command", {"cmd": "rm -rf keep"}, "call-2"))
            assert done.output_text == (
                'exec_command failed: CreateProcess { message: "Rejected(\\"`/bin/bash -c '
                "'rm -rf keep'` rejected: policy forbids commands starting with `rm`\\\")\" }"
            )
        assert spawner.commands == []

    asyncio.run(main())


def test_sandbox_denial_offers_unsandboxed_retry(tmp_path: Path) -> None:
    # The sandbox's refusal is scripted (a real bubblewrap's: the integration twin), so this
    # runs where bubblewrap does not.
    async def main() -> None:
        spawner = ScriptedSpawner(denied_in_sandbox())
        async with Harness(
            tmp_path, approval="on-request", profile=SandboxProfile.READ_ONLY, spawner=spawner
        ) as h:
            ask = approval(await h.run("shell_command", {"command": "touch g"}))
            assert ask.kind is ApprovalKind.SANDBOX_RETRY
            assert ask.reason == (
                "command was blocked by the sandbox; approve to run it again without the sandbox"
            )
            assert ask.proposed_amendment is None
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED))
            assert done.success
            # Sandboxed first, then once more without it.
            assert [r.sandbox.mode is not SandboxMode.NONE for r in spawner.spawned] == [
                True,
                False,
            ]
            # Denial returns the sandboxed run's own output.
            ask = approval(await h.run("shell_command", {"command": "touch h"}, "call-2"))
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.DENIED))
            assert done.output_text.startswith("Exit code: 1\n")
            assert SANDBOX_DENIED_TEXT.strip() in done.output_text
            assert len(spawner.spawned) == 3

    asyncio.run(main())


PATCH_Z = "*** Begin Patch\n*** Add File: z.txt\n+zed\n*** End Patch\n"


def _patch_digest(patch: str, cwd: str) -> str:
    # The approval key as spec'd, written out here so the test does not reuse the code.
    key = {"kind": "apply_patch", "environment_id": "local", "patch": patch, "cwd": cwd}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_apply_patch_asks_rejects_and_remembers(tmp_path: Path) -> None:
    async def main() -> None:
        # apply_patch runs in the router (the environment's filesystem): no process at all.
        spawner = ScriptedSpawner({})
        async with Harness(
            tmp_path, approval="on-request", profile=SandboxProfile.READ_ONLY, spawner=spawner
        ) as h:
            script = f"apply_patch <<'EOF'\n{PATCH_Z}EOF\n"
            ask = approval(await h.run("shell_command", {"command": script}))
            assert ask.kind is ApprovalKind.APPLY_PATCH and ask.element_index == 0
            assert ask.argv[-1] == script and ask.cwd == str(tmp_path)
            assert ask.reason == "" and ask.proposed_amendment is None
            # The heredoc's body is the patch, without its last newline.
            assert ask.approval_key_digest == _patch_digest(PATCH_Z[:-1], str(tmp_path))
            assert ApprovalDecision.APPROVED_WITH_AMENDMENT not in ask.available_decisions
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.DENIED))
            assert done.output_text == "patch rejected by user"
            assert done.termination is Termination.REJECTED and not done.success
            assert not (tmp_path / "z.txt").exists()
            ask = approval(await h.run("shell_command", {"command": script}, "call-2"))
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED_FOR_SESSION))
            assert done.success and (tmp_path / "z.txt").read_text() == "zed\n"
            # Under `never` a read-only turn rejects patches, except one approved for the
            # session (the cache is read before the patch's safety check).
            h.approval = "never"
            assert completed(await h.run("shell_command", {"command": script}, "call-3")).success
            other = script.replace("z.txt", "w.txt")
            done = completed(await h.run("shell_command", {"command": other}, "call-4"))
            assert done.output_text == (
                "patch rejected: writing is blocked by read-only sandbox; rejected by user "
                "approval settings"
            )
            assert done.termination is Termination.REJECTED and not done.success
            empty = "apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n"
            done = completed(await h.run("shell_command", {"command": empty}, "call-5"))
            assert done.output_text == "patch rejected: empty patch"
            assert not (tmp_path / "w.txt").exists()
        assert spawner.commands == []

    asyncio.run(main())


def test_apply_patch_tool_asks_then_aborts_or_applies(tmp_path: Path) -> None:
    async def main() -> None:
        spawner = ScriptedSpawner({})
        async with Harness(tmp_path, approval="untrusted", spawner=spawner) as h:
            item = json.dumps({"type": "custom_tool_call", "name": "apply_patch",
                               "call_id": "p1", "input": PATCH_Z})  # fmt: skip
            turn = h.turn()
            projected = project(item, turn, h.host())
            ask = approval(
                [e async for e in execute_call(projected, turn, h.ctx, h.origin_of(item))]
            )
            assert ask.kind is ApprovalKind.APPLY_PATCH
            assert ask.argv == () and ask.element is None and ask.cwd == str(tmp_path)
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.ABORT))
            assert re.fullmatch(r"aborted by user after \d+\.\ds", done.output_text)
            assert done.termination is Termination.CANCELLED and not (tmp_path / "z.txt").exists()
            ask = approval(
                [e async for e in execute_call(projected, turn, h.ctx, h.origin_of(item))]
            )
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED))
            assert done.output_text == (
                "Exit code: 0\nWall time: 0 seconds\nOutput:\n"
                "Success. Updated the following files:\nA z.txt\n"
            )
            assert done.output_item_json.startswith('{"type":"custom_tool_call_output"')
        assert spawner.commands == []

    asyncio.run(main())
