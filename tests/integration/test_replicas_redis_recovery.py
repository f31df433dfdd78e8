"""Shared state heals by itself (issue 30 item 3): three router processes, one redis-server
restarted with AOF and then without it, calls arriving during the outage.

After each restart every RPC of every replica answers again (not UNAVAILABLE) within a
few seconds — ListSessions included, which before answered `shared thread state
unavailable (sessions): ConnectionError … Connect call failed` for seconds after every
other call worked — and the replicas' logs hold no traceback: per replica and outage, one
WARNING when it starts, one INFO with the outage's summary when it ends.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, router_pb2

from tests.integration.replicas import Fleet, Replica, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

THREAD = "heal"
DOWN = "shared state unreachable"
BACK = "shared state reachable again"
# Generous for a loaded two-core box; it tells "recovers" from "never" (the defect).
RECOVERY_S = 20
_ids = itertools.count(1)


def request(name: str, args: Mapping[str, object], thread: str = THREAD,
            env: str = "box1") -> router_pb2.ExecuteRequest:  # fmt: skip
    """An Execute request of tool `name` on `thread`."""
    if name != "write_stdin":
        args = {"login": False, **args}
    item = function_item(name, dict(args), f"c{next(_ids)}")
    return router_pb2.ExecuteRequest(thread_id=thread, turn=turn(environment_id=env), item=item)


def unavailable(call: Callable[[], object]) -> str:
    """'' when `call` answers (any status but UNAVAILABLE), else what it said."""
    try:
        call()
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            return str(exc.details())
    return ""


def every_rpc(replica: Replica, sid: int) -> list[str]:
    """Each RPC of `replica` that still answers UNAVAILABLE (empty: all of them answer)."""
    stub, t = replica.stub, 10
    desk = approvals_pb2_grpc.ApprovalServiceStub(replica.channel)
    item = request("exec_command", {"cmd": "echo hi"})

    def execute() -> None:
        text = completed(replica.execute(request("exec_command", {"cmd": "echo hi"}))).output_text
        if "unavailable" in text:
            raise AssertionError(text)

    checks: dict[str, Callable[[], object]] = {
        "ListTools": lambda: stub.ListTools(
            router_pb2.ListToolsRequest(thread_id=THREAD, turn=turn()), timeout=t),
        "Project": lambda: stub.Project(
            router_pb2.ProjectRequest(thread_id=THREAD, turn=item.turn, item=item.item),
            timeout=t),
        "Execute": execute,
        "ListEnvironments": lambda: stub.ListEnvironments(
            router_pb2.ListEnvironmentsRequest(), timeout=t),
        "ListSessions": lambda: stub.ListSessions(
            router_pb2.ListSessionsRequest(thread_id=THREAD), timeout=t),
        "Interrupt": lambda: stub.Interrupt(
            router_pb2.InterruptRequest(thread_id=THREAD, call_id="none"), timeout=t),
        "TerminateSession": lambda: stub.TerminateSession(
            router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=sid + 1),
            timeout=t),
        "EndThread": lambda: stub.EndThread(
            router_pb2.EndThreadRequest(thread_id=f"other-{replica.name}"), timeout=t),
        "GetServerInfo": lambda: stub.GetServerInfo(router_pb2.GetServerInfoRequest(), timeout=t),
        "ListPendingApprovals": lambda: desk.ListPendingApprovals(
            approvals_pb2.ListPendingApprovalsRequest(), timeout=t),
        "DecideApproval": lambda: desk.DecideApproval(
            approvals_pb2.DecideApprovalRequest(
                approval_id="none", decision=router_pb2.APPROVAL_DECISION_DENIED),
            timeout=t),
    }  # fmt: skip
    failing = []
    for name, call in checks.items():
        try:
            said = unavailable(call)
        except AssertionError as exc:
            said = str(exc)
        if said:
            failing.append(f"{name}: {said}")
    return failing


def calls_during_outage(f: Fleet, sid: int) -> None:
    """What callers send while Redis is down: bounded, each answered (UNAVAILABLE or not)."""
    for replica in f.routers:
        for _ in range(3):
            replica.execute(request("exec_command", {"cmd": "echo during"}))
            replica.execute(request("exec_command", {"cmd": "sleep 2", "yield_time_ms": 100}))
            unavailable(lambda r=replica: r.stub.ListSessions(  # type: ignore[misc]
                router_pb2.ListSessionsRequest(thread_id=THREAD), timeout=10))  # fmt: skip
        write = {"session_id": sid, "chars": "", "yield_time_ms": 100}
        replica.execute(request("write_stdin", write))


def approval_crosses(f: Fleet) -> None:
    """A call parked on one replica is resumed on another (the store carries it)."""
    parked = f.routers[0].execute(request("exec_command", {"cmd": "touch ok.txt"}))
    assert parked[-1].WhichOneof("event") == "approval_required", parked[-1]
    resume = router_pb2.ExecuteRequest(
        thread_id=THREAD,
        resume=router_pb2.ResumeCall(
            approval_id=parked[-1].approval_required.approval_id,
            decision=router_pb2.APPROVAL_DECISION_APPROVED,
        ),
    )
    assert completed(f.routers[2].execute(resume)).exit_code == 0


def test_every_rpc_recovers_after_redis_restarts_and_nothing_logs_a_traceback(
    tmp_path: Path,
) -> None:
    rules = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
    with fleet(tmp_path, routers=3, daemons=1, aof=True, rules=rules) as f:
        first = f.routers[0].execute(request("exec_command", {"cmd": "cat", "tty": True,
                                                              "yield_time_ms": 200}))  # fmt: skip
        sid = completed(first).session_id
        assert sid
        for replica in f.routers:
            assert every_rpc(replica, sid) == []

        for outage, aof in enumerate((True, False), start=1):
            f.redis.stop(kill=True)
            calls_during_outage(f, sid)
            eventually(lambda n=outage: all(r.log().count(DOWN) == n  # type: ignore[misc]
                                            for r in f.routers),
                       "every replica logged the outage", RECOVERY_S)  # fmt: skip
            f.redis.start(aof=aof)
            for replica in f.routers:
                eventually(lambda r=replica: every_rpc(r, sid) == [],  # type: ignore[misc]
                           lambda r=replica: f"{r.name} still UNAVAILABLE: {every_rpc(r, sid)}",
                           RECOVERY_S, 0.2)  # fmt: skip
            approval_crosses(f)

        for replica in f.routers:
            log = replica.log()
            assert "Traceback" not in log, log[log.index("Traceback") - 500:][:3000]
            # One WARNING when each outage began, one INFO with its summary when it ended.
            assert log.count(DOWN) == 2, log
            back = re.findall(rf" (\w+) router \S+: {BACK} after [\d.]+ s \((\d+) operations", log)
            assert [level for level, _ in back] == ["INFO", "INFO"], log
            assert all(int(n) > 0 for _, n in back), back
            # No other line about the outage: not per failed call, not per bus retry.
            noisy = [line for line in log.splitlines()
                     if " WARNING " in line and "Connect call failed" in line
                     and DOWN not in line]  # fmt: skip
            assert noisy == [], noisy[:5]
