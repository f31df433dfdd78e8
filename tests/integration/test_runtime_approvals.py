"""Approvals with real processes: the round trip and the session cache, a real bubblewrap
denial and its unsandboxed retry (spec 02 §6.4, 06 §3). Amendments, denial and abort, batch
resume, forbidden, apply_patch and a scripted sandbox denial:
tests/unit/test_runtime_approvals_scripted.py."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from shellgate.common.errors import UnknownApprovalError
from shellgate.router.policy import SandboxProfile
from shellgate.router.runtime.call.events import (
    ApprovalDecision,
    ApprovalKind,
    Termination,
)

from tests.integration.runtime_support import Harness, approval, completed, normalise

PROMPT_TOUCH = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
FORBID_RM = 'prefix_rule(pattern=["rm"], decision="forbidden")\n'


def test_round_trip_and_session_cache(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path, approval="on-request", rules=PROMPT_TOUCH) as h:
            ask = approval(await h.run("shell_command", {"command": "touch a"}))
            assert ask.kind is ApprovalKind.EXEC_POLICY
            assert ask.argv == ("/bin/bash", "-c", "touch a")
            assert ask.reason == "`/bin/bash -c 'touch a'` requires approval by policy"
            assert ask.environment_id == "local" and ask.cwd == str(tmp_path)
            assert len(ask.approval_key_digest) == 64
            assert ApprovalDecision.APPROVED_WITH_AMENDMENT not in ask.available_decisions
            assert ask.expires_in_ms == 600_000
            assert not (tmp_path / "a").exists()
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED_FOR_SESSION))
            assert normalise(done.output_text) == "Exit code: 0\nWall time: W seconds\nOutput:\n"
            assert (tmp_path / "a").exists()
            # The same approval key is now cached: no prompt.
            again = await h.run("shell_command", {"command": "touch a"}, "call-2")
            assert completed(again).success
            # A different command still asks; the answered id is gone.
            other = approval(await h.run("shell_command", {"command": "touch b"}, "call-3"))
            with pytest.raises(UnknownApprovalError):
                await h.resume(ask.approval_id, ApprovalDecision.APPROVED)
            done = completed(await h.resume(other.approval_id, ApprovalDecision.DENIED))
            assert done.output_text == "exec command rejected by user"
            assert done.termination is Termination.REJECTED and not done.success
            assert not (tmp_path / "b").exists()

    asyncio.run(main())


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_sandbox_denial_offers_unsandboxed_retry(tmp_path: Path) -> None:
    async def main() -> None:
        async with Harness(tmp_path, approval="on-request", profile=SandboxProfile.READ_ONLY) as h:
            ask = approval(await h.run("shell_command", {"command": "touch g"}))
            assert ask.kind is ApprovalKind.SANDBOX_RETRY
            assert ask.reason == (
                "command was blocked by the sandbox; approve to run it again without the sandbox"
            )
            assert ask.proposed_amendment is None
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED))
            assert done.success and (tmp_path / "g").exists()
            # Denial returns the sandboxed run's own output.
            ask = approval(await h.run("shell_command", {"command": "touch h"}, "call-2"))
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.DENIED))
            assert done.output_text.startswith("Exit code: 1\n")
            assert "Read-only file system" in done.output_text

    asyncio.run(main())


PATCH_Z = "*** Begin Patch\n*** Add File: z.txt\n+zed\n*** End Patch\n"


def _patch_digest(patch: str, cwd: str) -> str:
    # The approval key as spec'd, written out here so the test does not reuse the code.
    key = {"kind": "apply_patch", "environment_id": "local", "patch": patch, "cwd": cwd}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
