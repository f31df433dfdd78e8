"""Live caller approvals (docs/approvals.md "Live caller approvals"): on the caller route a
turn with `live_network_approvals` has a running command's request to a `prompt`
network_rule host held while the command runs; its own stream carries a non-terminal
`approval_pending` with `caller_decides`, and the caller answers with
ApprovalService.AnswerApproval. A real router, real bubblewrap, real curl."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import grpc
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
TOKENS = {"agent": "tok-agent", "carol": "tok-carol", "bob": "tok-bob"}
POLICY_TEXT = "Codex blocked this request by network policy."
ON_REQUEST = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST
D = router_pb2
OFFERED = [
    D.APPROVAL_DECISION_APPROVED, D.APPROVAL_DECISION_APPROVED_FOR_SESSION,
    D.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT, D.APPROVAL_DECISION_DENIED,
    D.APPROVAL_DECISION_ABORT,
]  # fmt: skip


def _router(tmp_path: Path, deadline_ms: int = 30_000) -> contextlib.AbstractContextManager[Router]:
    tokens = "agent tok-agent\ncarol tok-carol\nbob tok-bob roles=operator\n"
    return prompt_router(tmp_path, tokens, route="caller", deadline_ms=deadline_ms)


def _md(subject: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {TOKENS[subject]}"),)


def _desk(router: Router) -> approvals_pb2_grpc.ApprovalServiceStub:
    return approvals_pb2_grpc.ApprovalServiceStub(router.channel)


def _answer(router: Router, approval_id: str, decision: int, as_: str = "agent") -> None:
    _desk(router).AnswerApproval(
        approvals_pb2.AnswerApprovalRequest(approval_id=approval_id, decision=decision),
        metadata=_md(as_), timeout=10,
    )  # fmt: skip


def _call(
    router: Router, command: str, work: Path, thread: str, decide: int | None = None,
    *, live: bool = True, on_pending: Any = None,
) -> tuple[list[Any], list[Any], str]:  # fmt: skip
    """Run `command` as agent; each live approval is answered `decide` by agent.
    (the approval_pending events, every event, the output text)."""
    request = governed_request(command, work, approval=ON_REQUEST)
    request.thread_id = thread
    request.turn.live_network_approvals = live
    asked: list[Any] = []
    events = []
    for event in router.stub.Execute(request, metadata=_md("agent"), timeout=60):
        events.append(event)
        if event.WhichOneof("event") == "approval_pending":
            asked.append(event.approval_pending)
            if on_pending is not None:
                on_pending(event.approval_pending)
            if decide is not None:
                _answer(router, event.approval_pending.approval_id, decide)
    return asked, events, completed(events).output_text


def _curl(port: int, times: int = 1) -> str:
    # The status code follows each body: a refused request shows 403.
    one = f"curl -sS -w ' code=%{{http_code}}\\n' http://{ALLOWED_IP}:{port}/"
    return "; ".join([one] * times)


def _metric(router: Router, decision: str) -> str:
    text: str = router.running.app.metrics.render().decode()
    line = f'shellgate_operator_decisions_total{{decision="{decision}",source="caller"}}'
    return next((row for row in text.splitlines() if row.startswith(line)), "")


def test_approve_once_lets_one_request_through(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        port = web.port
        operators_saw: list[int] = []

        def operators_look(pending: Any) -> None:
            # The caller's approval is not an operator's: not listed, not decidable.
            listed = _desk(router).ListPendingApprovals(
                approvals_pb2.ListPendingApprovalsRequest(), metadata=_md("bob"), timeout=10
            )
            operators_saw.append(len(listed.approvals))
            with pytest.raises(grpc.RpcError) as err:
                _desk(router).DecideApproval(
                    approvals_pb2.DecideApprovalRequest(
                        approval_id=pending.approval_id, decision=D.APPROVAL_DECISION_APPROVED
                    ),
                    metadata=_md("bob"), timeout=10,
                )  # fmt: skip
            assert err.value.code() is grpc.StatusCode.NOT_FOUND

        asked, events, text = _call(
            router, _curl(port), work, "t1", D.APPROVAL_DECISION_APPROVED,
            on_pending=operators_look,
        )  # fmt: skip
        assert len(asked) == 1 and operators_saw == [0]
        pending = asked[0]
        assert pending.caller_decides
        details = pending.details
        assert details.kind == D.APPROVAL_KIND_NETWORK
        assert details.approval_id == pending.approval_id
        assert details.reason == f"network access to {ALLOWED_IP}:{port} (http)"
        assert list(details.available_decisions) == OFFERED
        context = details.network_approval_context
        assert (context.host, context.protocol, context.port) == (ALLOWED_IP, "http", port)
        # Non-terminal: the command ran on in the same stream after the approval.
        kinds = [e.WhichOneof("event") for e in events]
        assert kinds.index("approval_pending") < kinds.index("completed") == len(kinds) - 1
        assert "approval_required" not in kinds
        assert f"origin {ALLOWED_IP} answered GET" in text and "code=200" in text, text
        assert _metric(router, "approved").endswith(" 1.0"), _metric(router, "approved")
        # Once only: the next command of the thread asks again.
        asked, _, text = _call(router, _curl(port), work, "t1", D.APPROVAL_DECISION_APPROVED)
        assert len(asked) == 1 and "answered GET" in text, text
        assert web.hits[ALLOWED_IP] == ["GET"] * 2
    audit = (tmp_path / "audit.log").read_text()
    assert audit.count('"type":"approval_pending"') == 2, audit[-2000:]
    assert audit.count('"type":"approval_pending","route":"caller"') == 2, audit[-2000:]
    records = [(r["decision"], r["source"]) for r in egress_records(tmp_path / "audit.log")]
    assert records == [("allow", "approval")] * 2, records


def test_approve_for_session_passes_the_next_requests_unasked(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        session = D.APPROVAL_DECISION_APPROVED_FOR_SESSION
        asked, _, text = _call(router, _curl(web.port, 2), work, "t1", session)
        assert len(asked) == 1 and text.count("answered GET") == 2, text
        asked, _, text = _call(router, _curl(web.port), work, "t1")
        assert asked == [] and "answered GET" in text, text
        assert web.hits[ALLOWED_IP] == ["GET"] * 3
        assert _metric(router, "approved_for_session").endswith(" 1.0")


def test_the_amendment_lands_as_a_network_rule_line(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        amend = D.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
        asked, _, text = _call(router, _curl(web.port), work, "t1", amend)
        assert len(asked) == 1 and "answered GET" in text, text
        lines = [
            line for f in (tmp_path / "rules").glob("*.rules")
            for line in f.read_text().splitlines()
        ]  # fmt: skip
        line = (f'network_rule(host="{ALLOWED_IP}", protocol="http", decision="allow", '
                f'justification="Allow http access to {ALLOWED_IP}")')  # fmt: skip
        assert line in lines, lines
        # Nothing asks again, in any thread, with or without the opt-in.
        asked, _, text = _call(router, _curl(web.port), work, "t2")
        assert asked == [] and "answered GET" in text, text
        asked, _, text = _call(router, _curl(web.port), work, "t3", live=False)
        assert asked == [] and "answered GET" in text, text
        assert web.hits[ALLOWED_IP] == ["GET"] * 3


def test_deny_refuses_the_connection_and_the_model_reads_why(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        asked, _, text = _call(router, _curl(web.port), work, "t1", D.APPROVAL_DECISION_DENIED)
        assert len(asked) == 1
        assert POLICY_TEXT in text and "code=403" in text, text
        assert web.hits[ALLOWED_IP] == []
        assert _metric(router, "denied").endswith(" 1.0")
    records = [(r["decision"], r["source"]) for r in egress_records(tmp_path / "audit.log")]
    assert records == [("deny", "approval")], records


def test_the_deadline_denies(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path, deadline_ms=1_500) as router:
        asked, _, text = _call(router, _curl(web.port), work, "t1")
        assert len(asked) == 1 and POLICY_TEXT in text and "code=403" in text, text
        assert web.hits[ALLOWED_IP] == []


def test_without_the_opt_in_the_host_is_refused_as_before(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        asked, events, text = _call(router, _curl(web.port), work, "t1", live=False)
        kinds = [e.WhichOneof("event") for e in events]
        assert asked == [] and kinds[-1] == "completed" and "approval_pending" not in kinds
        assert POLICY_TEXT in text and "code=403" in text, text
        assert web.hits[ALLOWED_IP] == []
    assert '"type":"approval_pending"' not in (tmp_path / "audit.log").read_text()


def test_a_caller_who_leaves_withdraws_its_approval(tmp_path: Path) -> None:
    """The stream's end withdraws the approval at once (not at its deadline): the
    caller's late answer finds nothing, and the request never reached the origin."""
    work = tmp_path / "work"
    work.mkdir()
    with origins() as web, _router(tmp_path) as router:
        request = governed_request(_curl(web.port), work, approval=ON_REQUEST)
        request.turn.live_network_approvals = True
        stream = router.stub.Execute(request, metadata=_md("agent"), timeout=60)
        pending = next(
            e.approval_pending for e in stream if e.WhichOneof("event") == "approval_pending"
        )
        stream.cancel()
        # A late answer: one racing the cancel on the wire may reach the router before it
        # has seen the caller leave (and be taken, as any answer while the call waits).
        time.sleep(0.5)

        def withdrawn() -> bool:
            try:
                _answer(router, pending.approval_id, D.APPROVAL_DECISION_APPROVED)
            except grpc.RpcError as err:
                return err.code() is grpc.StatusCode.NOT_FOUND
            return False

        eventually(withdrawn, "the live approval withdrawn", 15)
        assert web.hits[ALLOWED_IP] == []


def test_another_subject_may_not_answer(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    refused: list[tuple[Any, str]] = []

    with origins() as web, _router(tmp_path) as router:

        def others_try(pending: Any) -> None:
            # Another caller, and an operator too: only the call's own subject answers.
            for who in ("carol", "bob"):
                with pytest.raises(grpc.RpcError) as err:
                    _answer(router, pending.approval_id, D.APPROVAL_DECISION_APPROVED, who)
                refused.append((err.value.code(), _reason(err.value)))

        asked, _, text = _call(
            router, _curl(web.port), work, "t1", D.APPROVAL_DECISION_DENIED,
            on_pending=others_try,
        )  # fmt: skip
        assert len(asked) == 1 and POLICY_TEXT in text, text
        assert refused == [(grpc.StatusCode.PERMISSION_DENIED, "not_the_caller")] * 2
        assert web.hits[ALLOWED_IP] == []


def _reason(err: grpc.RpcError) -> str:
    from shellgate.common.grpc.status import error_from_status

    return error_from_status(err).reason  # type: ignore[arg-type]
