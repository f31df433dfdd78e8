"""Network approvals (docs/sandbox.md "Egress"): a running command's request to a host a
`prompt` network_rule names waits for an operator while the command runs; approve once,
for the session, with the `network_rule` amendment, or deny (a refused connection and
Codex's text in the model's output). A real router, real bubblewrap, real curl."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, common_pb2, router_pb2

from tests.integration.egress_support import (
    ALLOWED_IP,
    egress_records,
    governed_request,
    origins,
    prompt_router,
)
from tests.integration.test_discovery_dns import NAMESERVER_GROUP
from tests.router_harness import Router, completed
from tests.waiting import eventually

pytestmark = [
    # The test name server binds NAMESERVER:53, one at a time (tests/conftest.py).
    pytest.mark.xdist_group(NAMESERVER_GROUP),
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap sandbox"),
]
TOKENS = {"agent": "tok-agent", "bob": "tok-bob"}
POLICY_TEXT = "Codex blocked this request by network policy."
ON_REQUEST = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST
# The pending views the operator listed during the last `_call`.
views: list[Any] = []


def _router(tmp_path: Path, route: str = "operator") -> contextlib.AbstractContextManager[Router]:
    return prompt_router(
        tmp_path, "agent tok-agent\nbob tok-bob roles=operator\n", route=route
    )


def _md(subject: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {TOKENS[subject]}"),)


def _call(router: Router, command: str, work: Path, thread: str, decide: int | None = None,
          ) -> tuple[list[Any], str]:  # fmt: skip
    """Run `command`; when it asks, `decide` as bob. (kinds of the approvals, output text)."""
    request = governed_request(command, work, approval=ON_REQUEST)
    request.thread_id = thread
    asked: list[Any] = []
    views.clear()
    desk = approvals_pb2_grpc.ApprovalServiceStub(router.channel)
    events = []
    for event in router.stub.Execute(request, metadata=_md("agent"), timeout=60):
        events.append(event)
        if event.WhichOneof("event") == "approval_pending":
            pending = event.approval_pending
            asked.append(pending)
            assert decide is not None, "asked unexpectedly"
            # The operator's view: the same view builder as any approval's.
            listed = desk.ListPendingApprovals(
                approvals_pb2.ListPendingApprovalsRequest(), metadata=_md("bob"), timeout=10
            )
            views.extend(
                a for a in listed.approvals if a.approval_id == pending.details.approval_id
            )
            # Decided from another thread, as an operator's console would.
            threading.Thread(
                target=desk.DecideApproval,
                args=(
                    approvals_pb2.DecideApprovalRequest(
                        approval_id=pending.details.approval_id, decision=decide
                    ),
                ),
                kwargs={"metadata": _md("bob"), "timeout": 10},
                daemon=True,
            ).start()
    return asked, completed(events).output_text


def _curl(port: int, times: int = 1) -> str:
    return "; ".join([f"curl -sS http://{ALLOWED_IP}:{port}/"] * times)


def test_a_prompt_host_waits_for_an_operator(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        port = web.port
        # Approve once: this request passes; the next command asks again.
        asked, text = _call(router, _curl(port), work, "t1", router_pb2.APPROVAL_DECISION_APPROVED)
        assert [a.details.kind for a in asked] == [router_pb2.APPROVAL_KIND_NETWORK]
        assert f"network access to {ALLOWED_IP}:{port} (http)" in asked[0].details.reason
        assert [(v.kind, v.command) for v in views] == [("network", _curl(port))], views
        assert f"origin {ALLOWED_IP} answered GET" in text, text
        # For the session: the second request in the command, and the next command of the
        # thread, pass without asking.
        session = router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION
        asked, text = _call(router, _curl(port, 2), work, "t1", session)
        assert len(asked) == 1 and text.count("answered GET") == 2, text
        asked, text = _call(router, _curl(port), work, "t1")
        assert asked == [] and "answered GET" in text, text
        # Denied: the command gets a refused request, the model Codex's text.
        asked, text = _call(router, _curl(port), work, "t2", router_pb2.APPROVAL_DECISION_DENIED)
        assert len(asked) == 1 and POLICY_TEXT in text, text
        # The amendment: a network_rule line, and no more asking in any thread.
        amend = router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
        asked, text = _call(router, _curl(port), work, "t3", amend)
        assert len(asked) == 1 and "answered GET" in text, text
        written = (tmp_path / "rules").glob("*.rules")
        lines = [line for f in written for line in f.read_text().splitlines()]
        line = (f'network_rule(host="{ALLOWED_IP}", protocol="http", decision="allow", '
                f'justification="Allow http access to {ALLOWED_IP}")')  # fmt: skip
        assert line in lines, lines
        asked, text = _call(router, _curl(port), work, "t4")
        assert asked == [] and "answered GET" in text, text
        assert web.hits[ALLOWED_IP] == ["GET"] * 6
    records = [
        (r["thread"], r["decision"], r["source"]) for r in egress_records(tmp_path / "audit.log")
    ]
    assert len(records) == 7, records
    assert [r[1] for r in records] == ["allow"] * 4 + ["deny", "allow", "allow"], records
    text = (tmp_path / "audit.log").read_text()
    assert text.count('"type":"approval_pending"') == 4, text[-2000:]


def test_the_caller_route_refuses_a_prompt_host(tmp_path: Path) -> None:
    """A caller-routed approval ends the stream, which a running command cannot wait for:
    the host is refused with Codex's text, and nothing is parked."""
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path, route="caller") as router:
        asked, text = _call(router, _curl(web.port), work, "t1")
        assert asked == [] and POLICY_TEXT in text, text
        assert web.hits[ALLOWED_IP] == []


def test_a_caller_who_leaves_withdraws_the_network_approval(tmp_path: Path) -> None:
    """The approval lives while the element that asked runs: the caller hangs up, the
    command is killed, and the approval leaves the board at once (not at its deadline)."""
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        request = governed_request(_curl(web.port), work, approval=ON_REQUEST)
        stream = router.stub.Execute(request, metadata=_md("agent"), timeout=60)
        for event in stream:
            if event.WhichOneof("event") == "approval_pending":
                break
        desk = approvals_pb2_grpc.ApprovalServiceStub(router.channel)

        def pending() -> int:
            reply = desk.ListPendingApprovals(
                approvals_pb2.ListPendingApprovalsRequest(), metadata=_md("bob"), timeout=10
            )
            return len(reply.approvals)

        assert pending() == 1
        stream.cancel()
        eventually(lambda: pending() == 0, "the network approval withdrawn", 15)
        assert web.hits[ALLOWED_IP] == []
