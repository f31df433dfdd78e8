"""Operator-routed approvals end to end (docs/approvals.md): a real router on loopback, real
gRPC, real processes; the caller's Execute stream stays open while an operator decides."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from shellgate.router.runtime.threads.registry import owned_thread_key
from shellgate.router.service.approvals_config import ApprovalsConfig
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, common_pb2, router_pb2

from tests.router_harness import Router, completed, function_item, router_config, running_router
from tests.router_harness import turn as base_turn
from tests.waiting import eventually

DENIED_TEXT = 'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'
TOKENS = {"agent": "tok-agent", "alice": "tok-alice", "bob": "tok-bob", "carol": "tok-carol"}
OPERATORS = {"alice", "bob"}
PUSH = {"cmd": "git push 2>/dev/null; echo pushed", "login": False}


def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    lines = [
        f"{s} {t} roles=operator" if s in OPERATORS else f"{s} {t}" for s, t in TOKENS.items()
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _rules(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "base.rules").write_text('prefix_rule(pattern=["git", "push"], decision="prompt")\n')
    return rules


def _start(tmp_path: Path, **approvals: Any) -> Any:
    settings = {"default_route": "operator", "keepalive_ms": 100, "poll_ms": 200, **approvals}
    config = router_config(
        token_file=str(_token_file(tmp_path)),
        rules_dirs=(str(_rules(tmp_path)),),
        local_cwd=str(tmp_path),
        audit_log=str(tmp_path / "audit.log"),
        audit_fsync="always",
        approvals=ApprovalsConfig(**settings),
    )
    return running_router(config)


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    with _start(tmp_path, operator_deadline_ms=30_000) as r:
        yield r


def _md(subject: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {TOKENS[subject]}"),)


def _desk(router: Router) -> approvals_pb2_grpc.ApprovalServiceStub:
    return approvals_pb2_grpc.ApprovalServiceStub(router.channel)


def _open(
    router: Router,
    thread: str,
    call_id: str,
    *,
    as_: str = "agent",
    args: dict[str, Any] = PUSH,
    **turn: Any,
) -> Any:
    request = router_pb2.ExecuteRequest(
        thread_id=thread, turn=base_turn(**turn), item=function_item("exec_command", args, call_id)
    )
    return router.stub.Execute(request, metadata=_md(as_), timeout=60)


def _until_pending(stream: Any) -> tuple[list[Any], router_pb2.ApprovalPending]:
    seen = []
    for event in stream:
        seen.append(event)
        if event.WhichOneof("event") == "approval_pending":
            return seen, event.approval_pending
    raise AssertionError(f"no approval_pending in {[e.WhichOneof('event') for e in seen]}")


def _decide(router: Router, approval_id: str, decision: int, as_: str = "bob") -> None:
    _desk(router).DecideApproval(
        approvals_pb2.DecideApprovalRequest(approval_id=approval_id, decision=decision),
        metadata=_md(as_), timeout=10,
    )  # fmt: skip


def _pending(router: Router, as_: str = "alice") -> list[approvals_pb2.PendingApproval]:
    reply = _desk(router).ListPendingApprovals(
        approvals_pb2.ListPendingApprovalsRequest(), metadata=_md(as_), timeout=10
    )
    return list(reply.approvals)


def _reason(err: grpc.RpcError) -> str:
    from shellgate.common.grpc.status import error_from_status

    return error_from_status(err).reason  # type: ignore[arg-type]


def test_approve_continues_the_same_stream(router: Router) -> None:
    stream = _open(router, "op1", "c1")
    before, pending = _until_pending(stream)
    assert [e.WhichOneof("event") for e in before] == ["projection", "approval_pending"]
    assert pending.details.approval_id == pending.approval_id
    listed = _pending(router)
    assert [p.approval_id for p in listed] == [pending.approval_id]
    view = listed[0]
    assert (view.thread_id, view.call_id, view.caller_subject) == ("op1", "c1", "agent")
    assert view.tool == "exec_command" and view.environment_id == "local"
    assert view.command == PUSH["cmd"] and view.kind == "exec_policy"
    assert 'prefix_rule(["git","push"]) -> prompt' in view.matched_rules
    assert any("git push" in segment for segment in view.segments)
    assert view.deadline_unix_ms - view.created_unix_ms == 30_000
    assert router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION in view.available_decisions
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    rest = list(stream)
    kinds = [e.WhichOneof("event") for e in rest]
    assert "started" in kinds and kinds[-1] == "completed"
    done = completed(rest)
    assert json.loads(done.output_item_json)["call_id"] == "c1"
    assert done.output_text.endswith("pushed\n")
    assert _pending(router) == []
    # The audit log names the operator who decided, and records the pending approval.
    records = [json.loads(line) for line in (router_audit(router)).read_text().splitlines()]
    decided = [r for r in records if r.get("type") == "decision" and r["decision"] == "approved"]
    assert decided[-1]["approval"] == {"source": "operator", "who": "bob"}
    assert decided[-1]["subject"] == "agent"
    created = [r for r in records if r.get("type") == "approval_pending"]
    assert created[-1]["approval_id"] == pending.approval_id and created[-1]["route"] == "operator"


def router_audit(router: Router) -> Path:
    path = Path(router.running.app.config.audit_log)
    # Written off the event loop: wait (bounded) for the decision to land; the callers'
    # assertions say what is missing if it did not.
    with contextlib.suppress(AssertionError):
        eventually(
            lambda: '"source":"operator"' in path.read_text().replace(" ", ""),
            "the operator's decision in the audit log",
            2.5,
        )
    return path


def test_the_fast_paths_keep_the_operator_route(router: Router) -> None:
    """A coalesced stream delivers `approval_pending` while the call waits for the operator
    (it is not held back with the rest of the call), and an ExecuteOnce waits for the
    operator, then answers with the whole call."""
    request = router_pb2.ExecuteRequest(
        thread_id="op-fast", turn=base_turn(), item=function_item("exec_command", PUSH, "f1"),
        coalesce_ms=1000,
    )  # fmt: skip
    stream = router.stub.Execute(request, metadata=_md("agent"), timeout=60)
    first = next(stream)
    # Nobody has decided yet: the pending approval came out with the projection.
    assert first.WhichOneof("event") == "batch"
    assert [e.WhichOneof("event") for e in first.batch.events] == [
        "projection", "approval_pending"
    ]
    pending = first.batch.events[1].approval_pending
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    rest = [e for m in stream for e in (m.batch.events if m.WhichOneof("event") == "batch" else [m])]
    assert completed(rest).output_text.endswith("pushed\n")

    once = router_pb2.ExecuteOnceRequest(request=router_pb2.ExecuteRequest(
        thread_id="op-fast", turn=base_turn(), item=function_item("exec_command", PUSH, "f2"),
    ))  # fmt: skip
    reply = router.stub.ExecuteOnce.future(once, metadata=_md("agent"), timeout=60)
    listed = eventually(
        lambda: [p for p in _pending(router) if p.call_id == "f2"], "f2 pending", 10
    )
    assert not reply.done()
    _decide(router, listed[0].approval_id, router_pb2.APPROVAL_DECISION_DENIED)
    events = list(reply.result().events)
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds == ["projection", "approval_pending", "completed"]
    assert completed(events).output_text == DENIED_TEXT


def test_deny_and_abort_end_the_stream_with_codex_texts(router: Router) -> None:
    stream = _open(router, "op2", "d1")
    _, pending = _until_pending(stream)
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_DENIED)
    done = completed(list(stream))
    assert done.output_text == DENIED_TEXT
    assert done.termination == router_pb2.TERMINATION_REASON_REJECTED
    stream = _open(router, "op2", "d2")
    _, pending = _until_pending(stream)
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_ABORT)
    done = completed(list(stream))
    assert done.termination == router_pb2.TERMINATION_REASON_CANCELLED
    assert "aborted" in done.output_text


def test_approved_for_session_skips_the_next_ask(router: Router) -> None:
    stream = _open(router, "op3", "s1")
    _, pending = _until_pending(stream)
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION)
    assert completed(list(stream)).output_text.endswith("pushed\n")
    again = list(_open(router, "op3", "s2"))
    assert "approval_pending" not in [e.WhichOneof("event") for e in again]
    assert completed(again).output_text.endswith("pushed\n")


def test_amendment_is_written(router: Router, tmp_path: Path) -> None:
    args = {"cmd": "mkdir -p amended", "login": False}
    untrusted = common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED
    stream = _open(router, "op4", "m1", args=args, approval=untrusted)
    _, pending = _until_pending(stream)
    prefix = list(pending.details.proposed_amendment.prefix)
    assert prefix[:1] == ["mkdir"]
    view = _pending(router)[0]
    assert list(view.proposed_amendment) == prefix
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT)
    assert completed(list(stream)).exit_code == 0
    amendments = "".join(p.read_text() for p in (tmp_path / "rules").glob("*.rules"))
    assert json.dumps(prefix).replace(" ", "") in amendments.replace(" ", "")
    # The amendment holds: the same command runs without asking.
    again = list(_open(router, "op4", "m2", args=args, approval=untrusted))
    assert completed(again).exit_code == 0


def test_who_may_decide(router: Router) -> None:
    # alice (an operator) calls: she may not decide her own call; the caller's ResumeCall
    # is refused; a subject without the role is refused.
    stream = _open(router, "op5", "w1", as_="alice")
    _, pending = _until_pending(stream)
    approval_id = pending.approval_id
    with pytest.raises(grpc.RpcError) as err:
        _decide(router, approval_id, router_pb2.APPROVAL_DECISION_APPROVED, as_="alice")
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert _reason(err.value) == "self_approval"
    resume = router_pb2.ExecuteRequest(
        thread_id="op5",
        resume=router_pb2.ResumeCall(
            approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
        ),
    )
    with pytest.raises(grpc.RpcError) as err:
        list(router.stub.Execute(resume, metadata=_md("alice"), timeout=10))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert _reason(err.value) == "operator_route"
    for call in (
        lambda: _pending(router, as_="carol"),
        lambda: _decide(router, approval_id, router_pb2.APPROVAL_DECISION_APPROVED, as_="carol"),
    ):
        with pytest.raises(grpc.RpcError) as err:
            call()
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert _reason(err.value) == "not_operator"
    # Exactly one decision wins; the second is told it was already decided.
    _decide(router, approval_id, router_pb2.APPROVAL_DECISION_DENIED, as_="bob")
    with pytest.raises(grpc.RpcError) as err:
        _decide(router, approval_id, router_pb2.APPROVAL_DECISION_APPROVED, as_="bob")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert _reason(err.value) == "already_decided"
    assert completed(list(stream)).output_text == DENIED_TEXT


def test_the_approval_lives_once_on_the_board(router: Router) -> None:
    # The thread's pending record of an operator-routed approval carries no call: only a
    # slot the pending caps count. With the board entry gone, a caller still cannot resume.
    stream = _open(router, "once", "o1")
    _, pending = _until_pending(stream)
    shared = router.running.app.threads.shared
    key = owned_thread_key("agent", "once")
    record = router.call(shared.take_pending(key, pending.approval_id))
    assert record is not None and record.payload == ""
    assert record.call_id == "o1"
    router.call(shared.put_pending(key, record, 30_000))
    board = router.running.app.operator.approvals.board
    router.call(board.withdraw(pending.approval_id))
    resume = router_pb2.ExecuteRequest(
        thread_id="once",
        resume=router_pb2.ResumeCall(
            approval_id=pending.approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
        ),
    )
    with pytest.raises(grpc.RpcError) as err:
        list(router.stub.Execute(resume, metadata=_md("agent"), timeout=10))
    assert _reason(err.value) == "operator_route"
    stream.cancel()


def test_caller_disconnect_withdraws_the_approval(router: Router, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    args = {"cmd": f"git push 2>/dev/null; touch {marker}", "login": False}
    stream = _open(router, "op6", "x1", args=args)
    _, pending = _until_pending(stream)
    stream.cancel()
    eventually(lambda: _pending(router) == [], "the approval withdrawn", 5)
    with pytest.raises(grpc.RpcError) as err:
        _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    time.sleep(0.2)
    assert not marker.exists()


def test_deadline_fallback_and_late_decision(tmp_path: Path) -> None:
    with _start(tmp_path, operator_deadline_ms=600) as router:
        started = time.monotonic()
        stream = _open(router, "op7", "e1")
        _, pending = _until_pending(stream)
        rest = list(stream)
        # Keepalives came while it waited, then the deny fallback's Codex text.
        assert "approval_waiting" in [e.WhichOneof("event") for e in rest]
        assert completed(rest).output_text == DENIED_TEXT
        assert time.monotonic() - started < 10
        with pytest.raises(grpc.RpcError) as err:
            _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert _reason(err.value) == "approval_expired"
        records = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
        denied = [r for r in records if r.get("type") == "decision" and r["decision"] == "denied"]
        assert denied[-1]["approval"]["source"] == "deadline"


def test_turn_escalates_but_never_downgrades(tmp_path: Path) -> None:
    with _start(tmp_path, default_route="caller") as router:
        # Router default caller: today's behaviour.
        events = list(_open(router, "op8", "r1"))
        assert events[-1].WhichOneof("event") == "approval_required"
        # The turn escalates to the operator route.
        stream = _open(router, "op8", "r2", approval_route=common_pb2.APPROVAL_ROUTE_OPERATOR)
        _, pending = _until_pending(stream)
        _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
        assert completed(list(stream)).output_text.endswith("pushed\n")


def test_turn_caller_route_cannot_downgrade_operator(router: Router) -> None:
    stream = _open(router, "op9", "g1", approval_route=common_pb2.APPROVAL_ROUTE_CALLER)
    _, pending = _until_pending(stream)
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_DENIED)
    assert completed(list(stream)).output_text == DENIED_TEXT


def test_metrics_move(router: Router) -> None:
    stream = _open(router, "op10", "k1")
    _, pending = _until_pending(stream)
    text = router.running.app.metrics.render().decode()
    assert 'shellgate_pending_approvals{route="operator"} 1.0' in text
    _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    list(stream)
    text = router.running.app.metrics.render().decode()
    assert 'shellgate_operator_decisions_total{decision="approved",source="operator"} 1.0' in text
    assert 'shellgate_pending_approvals{route="operator"} 0.0' in text


def test_config_replace_keeps_defaults() -> None:
    config = replace(ApprovalsConfig(), default_route="operator")
    assert config.deadline_fallback == "deny" and config.operator_deadline_ms == 600_000
