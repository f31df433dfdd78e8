"""The audit log records every decision and outcome of real calls, hash-chained (issue 19)."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from shellgate.router.cli.main import main as cli_main
from shellgate.router.policy import SandboxProfile
from shellgate.router.runtime.call.events import ApprovalDecision, ApprovalKind, Termination
from shellgate.router.service.audit_log import AuditLog, verify_files
from shellgate.v1 import router_pb2

from tests.integration.runtime_support import Harness, approval, completed
from tests.router_harness import function_item, router_config, running_router
from tests.router_harness import turn as make_turn

RULES = (
    'prefix_rule(pattern=["touch"], decision="prompt")\n'
    'prefix_rule(pattern=["rm"], decision="forbidden")\n'
)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _of(records: list[dict[str, Any]], call_id: str) -> list[tuple[str, str]]:
    """(type, decision or termination) of one call's records, in order."""
    return [
        (r["type"], r["decision"] if r["type"] == "decision" else r["termination"])
        for r in records
        if r.get("call_id") == call_id
    ]


async def _scenarios(tmp_path: Path, log: AuditLog) -> None:
    async with Harness(tmp_path, approval="on-request", rules=RULES) as h:
        h.ctx.audit, h.ctx.caller_subject = log, "alice"
        (tmp_path / "keep").write_text("x")
        done = completed(await h.run("shell_command", {"command": "rm -rf keep"}, "forbid"))
        assert done.termination is Termination.FORBIDDEN
        ask = approval(await h.run("shell_command", {"command": "touch a"}, "asked"))
        done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED_FOR_SESSION))
        assert done.success
        assert completed(await h.run("shell_command", {"command": "touch a"}, "cached")).success
        args = {"command": "sleep 5", "timeout_ms": 300}
        done = completed(await h.run("shell_command", args, "slow"))
        assert done.termination is Termination.TIMED_OUT
        if shutil.which("bwrap") is not None:
            h.profile = SandboxProfile.READ_ONLY
            ask = approval(await h.run("shell_command", {"command": "mkdir g"}, "boxed"))
            assert ask.kind is ApprovalKind.SANDBOX_RETRY
            done = completed(await h.resume(ask.approval_id, ApprovalDecision.APPROVED))
            assert done.success and (tmp_path / "g").exists()


def test_one_record_per_decision_and_outcome(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.log"
    log = AuditLog(str(path), fsync="always")
    asyncio.run(_run(tmp_path, log))
    log.close()
    records = _records(path)
    assert _of(records, "forbid") == [("decision", "forbidden"), ("outcome", "forbidden")]
    assert _of(records, "asked") == [
        ("decision", "ask"), ("decision", "approved"), ("outcome", "exited"),
    ]  # fmt: skip
    assert _of(records, "cached") == [("decision", "allow"), ("outcome", "exited")]
    assert _of(records, "slow") == [("decision", "allow"), ("outcome", "timed_out")]
    by_call = {(r.get("call_id"), r["type"], r.get("decision")): r for r in records}
    forbid = by_call["forbid", "decision", "forbidden"]
    assert forbid["subject"] == "alice" and forbid["tool"] == "shell_command"
    assert forbid["command"] == ["/bin/bash", "-c", "rm -rf keep"]
    assert forbid["segments"] == [["rm", "-rf", "keep"]]
    assert forbid["matched_rules"][0]["matchedPrefix"] == ["rm"]
    assert len(forbid["command_digest"]) == 64 and forbid["environment"]["id"] == "local"
    assert forbid["environment"]["host"] == socket.gethostname()
    assert forbid["environment"]["shell"] == "/bin/bash"
    approved = by_call["asked", "decision", "approved"]
    assert approved["approval"] == {"source": "caller", "who": "alice"}
    assert approved["for_session"] is True
    assert by_call["cached", "decision", "allow"]["approval"]["source"] == "cached_grant"
    assert by_call["slow", "decision", "allow"]["approval"]["source"] == "policy"
    slow = by_call["slow", "outcome", None]
    assert slow["timed_out"] is True and 250 <= slow["duration_ms"] < 5000
    if shutil.which("bwrap") is not None:
        assert _of(records, "boxed") == [
            ("decision", "allow"), ("outcome", "exited"), ("decision", "ask"),
            ("decision", "approved"), ("outcome", "exited"),
        ]  # fmt: skip
        boxed = [r for r in records if r.get("call_id") == "boxed"]
        assert boxed[1]["sandbox"] == "read_only" and boxed[1]["sandbox_denied"] is True
        assert boxed[1]["exit_code"] == 1
        assert boxed[2]["approval_kind"] == "sandbox_retry"
        assert boxed[4]["sandbox"] == "none" and boxed[4]["sandbox_retry"] is True
        assert boxed[4]["exit_code"] == 0
    # The chain: intact, then broken at exactly the changed or the missing line.
    assert [r["seq"] for r in records] == list(range(len(records)))
    assert verify_files([str(path)]).broken_at is None
    assert records[0]["type"] == "start" and records[0]["head"] is None
    assert cli_main(["audit", "verify", "--unsigned", str(path)]) == 0
    lines = path.read_bytes().splitlines(keepends=True)
    changed = lines[:]
    changed[3] = changed[3].replace(b'"seq":3', b'"seq":4')
    (tmp_path / "changed.log").write_bytes(b"".join(changed))
    result = verify_files([str(tmp_path / "changed.log")])
    assert result.broken_at is not None and result.broken_at[1] == 4
    flipped = lines[:]
    flipped[2] = flipped[2].replace(b"alice", b"alicf")
    (tmp_path / "flipped.log").write_bytes(b"".join(flipped))
    result = verify_files([str(tmp_path / "flipped.log")])
    assert result.broken_at is not None and result.broken_at[1] == 3
    (tmp_path / "removed.log").write_bytes(b"".join(lines[:5] + lines[6:]))
    result = verify_files([str(tmp_path / "removed.log")])
    assert result.broken_at is not None and result.broken_at[1] == 6
    assert cli_main(["audit", "verify", "--unsigned", str(tmp_path / "removed.log")]) == 1


async def _run(tmp_path: Path, log: AuditLog) -> None:
    work = tmp_path / "work"
    work.mkdir()
    await _scenarios(work, log)


@pytest.mark.parametrize("command_text", [True, False])
def test_command_text_redacted_or_left_out(tmp_path: Path, command_text: bool) -> None:
    path = tmp_path / "audit.log"
    log = AuditLog(
        str(path),
        command_text=command_text,
        redact=lambda t: t.replace("s3cr3t-v4lue", "[REDACTED]"),
    )

    async def main() -> None:
        async with Harness(tmp_path, approval="never") as h:
            h.ctx.audit = log
            await h.run("shell_command", {"command": "echo s3cr3t-v4lue"}, "c")

    asyncio.run(main())
    log.close()
    text = path.read_text()
    assert "s3cr3t-v4lue" not in text
    decision = _records(path)[1]
    if command_text:
        assert decision["command"] == ["/bin/bash", "-c", "echo [REDACTED]"]
    else:
        assert "command" not in decision and "segments" not in decision
    assert verify_files([str(path)]).broken_at is None


def test_live_router_audits_the_caller_and_keeps_tokens_out(tmp_path: Path) -> None:
    token = "tok-4f1a9c2e7b3d5a60"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {token}\n")
    path = tmp_path / "audit.log"
    config = router_config(
        token_file=str(tokens), local_cwd=str(tmp_path), audit_log=str(path),
        audit_fsync="always",
    )  # fmt: skip
    with running_router(config) as router:
        request = router_pb2.ExecuteRequest(
            thread_id="t", turn=make_turn(),
            item=function_item("shell_command", {"command": "echo hi", "login": False}, "live"),
        )  # fmt: skip
        events = list(
            router.stub.Execute(
                request, timeout=60, metadata=[("authorization", f"Bearer {token}")]
            )
        )
        assert events[-1].completed.exit_code == 0
    # The router's shutdown closed the log: everything is on disk.
    records = _records(path)
    assert _of(records, "live") == [("decision", "allow"), ("outcome", "exited")]
    assert {r["subject"] for r in records if r["type"] != "start"} == {"alice"}
    assert token not in path.read_text()
    assert verify_files([str(path)]).broken_at is None
