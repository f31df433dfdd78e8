"""`shellgate call` while an operator-routed approval waits: a real router (operator route,
`[approvals] default_route = "operator"`), the CLI as a subprocess, the decision made
through ApprovalService from the test.

* One stderr line when it starts waiting (`waiting for an operator: approval <id>, deadline
  in N s`), then at most one update every ~10 s although keepalives come every 100 ms.
* stdout stays the tool's output only; the operator's approval lets the command run.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.router.service.approvals_config import ApprovalsConfig
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, router_pb2

from tests.router_harness import Router, router_config, running_router
from tests.waiting import eventually

CALL = [sys.executable, "-m", "shellgate.router.cli.main", "call"]
TOKENS = {"agent": "tok-agent", "alice": "tok-alice"}
WAITING = re.compile(rb"^waiting for an operator: approval (\S+), deadline in (\d+) s$", re.M)
STILL = re.compile(rb"^still waiting for an operator: approval (\S+), deadline in (\d+) s$", re.M)


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    tokens = tmp_path / "tokens"
    tokens.write_text("agent tok-agent\nalice tok-alice roles=operator\n")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "base.rules").write_text('prefix_rule(pattern=["printf"], decision="prompt")\n')
    config = router_config(
        token_file=str(tokens),
        rules_dirs=(str(rules),),
        local_cwd=str(tmp_path),
        approvals=ApprovalsConfig(
            default_route="operator", keepalive_ms=100, poll_ms=200, operator_deadline_ms=40_000
        ),
    )
    with running_router(config) as running:
        yield running


def _read_until(fd: int, seen: bytearray, pattern: re.Pattern[bytes], timeout_s: float) -> bytes:
    def arrived() -> bool:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"EOF before {pattern.pattern!r}: {bytes(seen)!r}"
            seen.extend(chunk)
        return pattern.search(seen) is not None

    eventually(arrived, lambda: f"{pattern.pattern!r} in {bytes(seen)!r}", timeout_s, 0)
    return bytes(seen)


def test_call_prints_the_pending_state_and_deadline_while_an_operator_decides(
    router: Router, tmp_path: Path
) -> None:
    proc = subprocess.Popen(
        [*CALL, "--target", f"127.0.0.1:{router.port}", "--token", TOKENS["agent"],
         "--cmd", "printf operator-ok", "--workdir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None and proc.stdout is not None
    try:
        err = bytearray()
        started = time.monotonic()
        found = WAITING.search(_read_until(proc.stderr.fileno(), err, WAITING, 20))
        assert found is not None
        approval_id, left = found.group(1).decode(), int(found.group(2))
        assert 35 <= left <= 40, err
        desk = approvals_pb2_grpc.ApprovalServiceStub(router.channel)
        md = (("authorization", f"Bearer {TOKENS['alice']}"),)
        listed = desk.ListPendingApprovals(
            approvals_pb2.ListPendingApprovalsRequest(), metadata=md, timeout=10
        )
        assert [a.approval_id for a in listed.approvals] == [approval_id]
        # Keepalives every 100 ms: the update comes ~10 s later, and once.
        _read_until(proc.stderr.fileno(), err, STILL, 20)
        assert time.monotonic() - started >= 9.5
        still = STILL.findall(err)
        assert len(still) == 1 and still[0][0].decode() == approval_id, err
        assert int(still[0][1]) < left, err
        desk.DecideApproval(
            approvals_pb2.DecideApprovalRequest(
                approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
            ),
            metadata=md,
            timeout=10,
        )
        out, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.extend(rest)
    assert proc.returncode == 0, (out, bytes(err))
    assert b"operator-ok" in out and b"waiting" not in out, out
    assert len(WAITING.findall(err)) == 1, err
