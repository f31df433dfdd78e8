"""Operator approvals across replicas (docs/approvals.md): two router processes, one real
redis-server; a call parked on one replica is listed and decided on the other, and the
caller's open stream on the first gets the output."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, router_pb2

from tests.integration.replicas import Fleet, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

AGENT, OPERATOR = "tok-agent", "tok-operator"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    folder = tmp_path_factory.mktemp("opfleet")
    tokens = folder / "tokens"
    tokens.write_text(f"agent {AGENT}\nops {OPERATOR} roles=operator\n")
    extra = (
        f'token_file = "{tokens}"\n'
        "[approvals]\n"
        'default_route = "operator"\n'
        "keepalive_ms = 200\n"
        "poll_ms = 300\n"
    )
    rules = 'prefix_rule(pattern=["git", "push"], decision="prompt")\n'
    with fleet(folder, routers=2, daemons=0, extra_config=extra, rules=rules) as f:
        yield f


def _md(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _open(channel: grpc.Channel, thread: str, call_id: str, marker: Path) -> object:
    args = {"cmd": f"git push 2>/dev/null; echo replicated > {marker}; echo done", "login": False}
    request = router_pb2.ExecuteRequest(
        thread_id=thread, turn=turn(), item=function_item("exec_command", args, call_id)
    )
    from shellgate.v1 import router_pb2_grpc

    return router_pb2_grpc.ToolRouterServiceStub(channel).Execute(
        request, metadata=_md(AGENT), timeout=60
    )


def _pending_id(stream: object) -> str:
    for event in stream:  # type: ignore[attr-defined]
        if event.WhichOneof("event") == "approval_pending":
            return str(event.approval_pending.approval_id)
    raise AssertionError("no approval_pending")


def _listed(channel: grpc.Channel) -> list[approvals_pb2.PendingApproval]:
    desk = approvals_pb2_grpc.ApprovalServiceStub(channel)
    reply = desk.ListPendingApprovals(
        approvals_pb2.ListPendingApprovalsRequest(), metadata=_md(OPERATOR), timeout=10
    )
    return list(reply.approvals)


def _decide(channel: grpc.Channel, approval_id: str, decision: int) -> None:
    approvals_pb2_grpc.ApprovalServiceStub(channel).DecideApproval(
        approvals_pb2.DecideApprovalRequest(approval_id=approval_id, decision=decision),
        metadata=_md(OPERATOR), timeout=10,
    )  # fmt: skip


def test_parked_on_a_decided_on_b(two: Fleet) -> None:
    a, b = two.routers
    marker = two.folder / "decided-on-b"
    stream = _open(a.channel, "rep1", "c1", marker)
    approval_id = _pending_id(stream)
    assert [p.approval_id for p in _listed(b.channel)] == [approval_id]
    assert _listed(b.channel)[0].caller_subject == "agent"
    started = time.monotonic()
    _decide(b.channel, approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    rest = list(stream)  # type: ignore[call-overload]
    assert completed(rest).output_text.endswith("done\n")
    # Woken by the replica bus notice, not only by the poll (a bounded second anyway).
    assert time.monotonic() - started < 5
    assert marker.read_text() == "replicated\n"
    assert _listed(a.channel) == [] and _listed(b.channel) == []
    # A second decision on the other replica: exactly one wins.
    with pytest.raises(grpc.RpcError) as err:
        _decide(a.channel, approval_id, router_pb2.APPROVAL_DECISION_DENIED)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_caller_gone_on_a_withdraws_on_b(two: Fleet) -> None:
    a, b = two.routers
    marker = two.folder / "never"
    stream = _open(a.channel, "rep2", "c2", marker)
    approval_id = _pending_id(stream)
    stream.cancel()  # type: ignore[attr-defined]
    eventually(lambda: _listed(b.channel) == [], "the approval withdrawn on b", 5)
    with pytest.raises(grpc.RpcError) as err:
        _decide(b.channel, approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert not marker.exists()


def test_board_failures_count_as_the_store_down(tmp_path: Path) -> None:
    # A failed board operation is a failed shared-store operation: UNAVAILABLE for the
    # operator, counted by operation in the store's metrics, the store reported down.
    from tests.integration.test_replicas_redis import metrics

    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {OPERATOR} roles=operator\n")
    extra = (f'token_file = "{tokens}"\nmetrics_listen = "127.0.0.1:0"\n'
             '[approvals]\ndefault_route = "operator"\n')  # fmt: skip
    with fleet(tmp_path, routers=1, daemons=0, extra_config=extra) as f:
        (router,) = f.routers
        assert _listed(router.channel) == []
        f.redis.stop(kill=True)
        with pytest.raises(grpc.RpcError) as err:
            _listed(router.channel)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "approvals list" in (err.value.details() or "")
        text = metrics(router)
        assert "shellgate_shared_state_up 0" in text
        assert re.search(r'shellgate_shared_state_errors_total\{op="approvals_list"\} [1-9]', text)
