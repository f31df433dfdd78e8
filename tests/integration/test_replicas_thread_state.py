"""Every piece of thread state is shared or routed (issue 15 item 1), on three real replicas.

One fleet for the module (three router processes, one redis-server, one daemon): a parked
approval resumes on any replica (once), also after its replica's SIGKILL; Interrupt and
TerminateSession reach the replica that holds the stream or the local session; an
amendment approved on one replica applies on the others; approval grants hold everywhere.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from shellgate.v1 import common_pb2, router_pb2

from tests.integration.replicas import Fleet, Replica, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

RULES = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
APPROVED = router_pb2.APPROVAL_DECISION_APPROVED


@pytest.fixture(scope="module")
def the_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three replicas, one Redis, one daemon (`box1`), a prompt rule for touch."""
    with fleet(tmp_path_factory.mktemp("fleet"), routers=3, daemons=1, rules=RULES) as f:
        yield f


def run(
    replica: Replica, thread: str, command: str, call_id: str, env: str = "box1",
    approval: int = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST, **args: Any,
) -> list[router_pb2.ExecuteResponse]:
    """One exec_command (login shell off)."""
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(environment_id=env, approval=approval),
        item=function_item("exec_command", {"cmd": command, "login": False, **args}, call_id),
    )
    return replica.execute(request)


def resume(replica: Replica, thread: str, approval_id: str, decision: Any = APPROVED) -> Any:
    """The events of a resumed call."""
    request = router_pb2.ExecuteRequest(
        thread_id=thread, resume=router_pb2.ResumeCall(approval_id=approval_id, decision=decision)
    )
    return replica.execute(request)


def parked(events: list[router_pb2.ExecuteResponse]) -> router_pb2.ApprovalRequired:
    """The approval_required event that ends a parked call."""
    assert events[-1].WhichOneof("event") == "approval_required", events
    return events[-1].approval_required


def outcome(events: list[router_pb2.ExecuteResponse]) -> tuple[object, ...]:
    """What the model sees, wall time and chunk id left out."""
    done = completed(events)
    body = done.output_text.split("Output:\n", 1)[-1]
    return done.success, done.exit_code, done.termination, body, done.truncated


def test_parked_on_one_replica_resumes_on_another_once(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    command = "touch moved.txt && echo resumed"
    # What one router gives: park and resume on r0.
    same = parked(run(r0, "t-same", command, "s1"))
    single = outcome(resume(r0, "t-same", same.approval_id))
    assert single[:2] == (True, 0) and single[3] == "resumed\n"
    ask = parked(run(r0, "t-moved", command, "m1"))
    assert outcome(resume(r1, "t-moved", ask.approval_id)) == single
    for replica in (r0, r1, r2):
        with pytest.raises(grpc.RpcError) as err:
            resume(replica, "t-moved", ask.approval_id)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_concurrent_double_resume_has_one_winner(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    ask = parked(run(r0, "t-race", "touch race.txt", "r1"))
    results: list[object] = []

    def attempt(replica: Replica) -> None:
        try:
            results.append(outcome(resume(replica, "t-race", ask.approval_id)))
        except grpc.RpcError as exc:
            results.append(exc.code())

    workers = [threading.Thread(target=attempt, args=(r,)) for r in (r1, r2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert len(results) == 2 and grpc.StatusCode.NOT_FOUND in results, results
    [won] = [r for r in results if isinstance(r, tuple)]
    assert won[:2] == (True, 0), results


def test_a_wrong_decision_keeps_the_call_for_any_replica(the_fleet: Fleet) -> None:
    r0, r1, _ = the_fleet.routers[:3]
    ask = parked(run(r0, "t-wrong", "touch wrong.txt", "w1"))
    # A prompt rule proposes no amendment: that decision is not on offer.
    not_offered = router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
    assert not_offered not in ask.available_decisions
    with pytest.raises(grpc.RpcError) as err:
        resume(r1, "t-wrong", ask.approval_id, not_offered)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    denied = completed(resume(r1, "t-wrong", ask.approval_id, router_pb2.APPROVAL_DECISION_DENIED))
    assert denied.termination == router_pb2.TERMINATION_REASON_REJECTED


def test_interrupt_on_another_replica_ends_the_stream(the_fleet: Fleet) -> None:
    r0, r1, _ = the_fleet.routers[:3]
    request = router_pb2.ExecuteRequest(
        thread_id="t-int", turn=turn(environment_id="box1"),
        item=function_item("exec_command", {"cmd": "sleep 30", "login": False,
                                            "yield_time_ms": 25_000}, "i1"),
    )  # fmt: skip
    stream = r0.stub.Execute(request, timeout=30)
    first = next(stream)
    assert first.WhichOneof("event") == "projection"
    started = time.monotonic()
    # The call is registered once its stream runs; Interrupt through r1 reaches r0.
    r1.stub.Interrupt(router_pb2.InterruptRequest(thread_id="t-int", call_id="i1"), timeout=10)
    rest = list(stream)
    done = completed(rest)
    assert done.termination == router_pb2.TERMINATION_REASON_CANCELLED
    assert done.output_text.startswith("aborted by user after ")
    assert time.monotonic() - started < 10
    with pytest.raises(grpc.RpcError) as err:
        r1.stub.Interrupt(router_pb2.InterruptRequest(thread_id="t-int", call_id="i1"), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_terminate_session_reaches_the_replica_holding_a_local_session(the_fleet: Fleet) -> None:
    _, r1, r2 = the_fleet.routers[:3]
    sid = completed(run(r1, "t-term", "sleep 30", "l1", env="local", yield_time_ms=250)).session_id
    request = router_pb2.TerminateSessionRequest(thread_id="t-term", session_id=sid)
    assert r2.stub.TerminateSession(request, timeout=10).was_running
    gone = completed(
        r1.execute(
            router_pb2.ExecuteRequest(
                thread_id="t-term", turn=turn(environment_id="local"),
                item=function_item("write_stdin", {"session_id": sid}, "l2"),
            )
        )
    )  # fmt: skip
    assert gone.output_text == f"write_stdin failed: Unknown process id {sid}"
    with pytest.raises(grpc.RpcError) as err:
        r2.stub.TerminateSession(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_an_amendment_approved_on_one_replica_applies_on_all(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    command = "mkdir -p amended"
    untrusted = common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED
    ask = parked(run(r0, "t-amend", command, "a1", approval=untrusted))
    assert list(ask.proposed_amendment.prefix)[:1] == ["mkdir"]
    decision = router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
    assert completed(resume(r0, "t-amend", ask.approval_id, decision)).exit_code == 0
    for index, replica in enumerate((r1, r2)):
        # The notice travels over pub/sub: allow it a moment, bounded.
        def allowed() -> list[router_pb2.ExecuteResponse] | None:
            events = run(replica, f"t-amend-{index}", command, "a2", approval=untrusted)  # noqa: B023
            return events if events[-1].WhichOneof("event") == "completed" else None

        events = eventually(allowed, f"{replica.name} allowing the amended command", 5, 0.2)
        assert completed(events).exit_code == 0, replica.name
    # A replica started later (with its own, empty amendments file, as in a pod) loads the
    # shared amendments from Redis before it serves.
    (the_fleet.folder / "rules" / "default.rules").unlink()
    late = the_fleet.start_router("late")
    try:
        late_run = run(late, "t-amend-late", command, "a3", approval=untrusted)
        assert completed(late_run).exit_code == 0
    finally:
        late.stop()


def test_session_grants_hold_on_every_replica(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    command = "touch granted.txt"
    ask = parked(run(r0, "t-grant", command, "g1"))
    session = router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION
    assert completed(resume(r1, "t-grant", ask.approval_id, session)).exit_code == 0
    for replica in (r0, r1, r2):
        assert completed(run(replica, "t-grant", command, f"g-{replica.name}")).exit_code == 0
    # Another thread does not inherit the grant.
    parked(run(r2, "t-grant-other", command, "g9"))


def test_parked_approvals_survive_their_replica_sigkill(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    ask = parked(run(r0, "t-killed", "touch after-kill.txt && echo survived", "k1"))
    r0.kill()
    assert outcome(resume(r2, "t-killed", ask.approval_id))[3] == "survived\n"
    with pytest.raises(grpc.RpcError) as err:
        resume(r1, "t-killed", ask.approval_id)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
