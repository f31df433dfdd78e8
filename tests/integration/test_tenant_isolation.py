"""Two subjects on one router: neither can reach the other's threads, sessions, approvals,
grants or calls, whatever thread id it names (issue 13 finding 1)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import router_pb2

from tests.router_harness import (
    Router,
    completed,
    function_item,
    router_config,
    running_router,
    turn,
)

ALICE = (("authorization", "Bearer tok-alice-0d8a"),)
BOB = (("authorization", "Bearer tok-bob-77c1"),)
THREAD = "shared-thread"


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice tok-alice-0d8a\nbob tok-bob-77c1\n")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "default.rules").write_text(
        'prefix_rule(pattern=["git", "push"], decision="prompt")\n'
    )
    config = router_config(
        token_file=str(tokens), rules_dirs=(str(rules),), local_cwd=str(tmp_path)
    )
    with running_router(config) as r:
        yield r


def _execute(
    router: Router, metadata: tuple[tuple[str, str], ...], **fields: object
) -> list[router_pb2.ExecuteResponse]:
    request = router_pb2.ExecuteRequest(thread_id=THREAD, **fields)  # type: ignore[arg-type]
    return list(router.stub.Execute(request, timeout=60, metadata=metadata))


def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as err:
        call()  # type: ignore[operator]
    return err.value.code()


def test_another_subject_cannot_reach_a_thread(router: Router) -> None:
    stub = router.stub
    # Alice: a live PTY session, a parked approval and a session grant on THREAD.
    started = completed(_execute(router, ALICE, turn=turn(), item=function_item(
        "exec_command", {"cmd": "cat", "tty": True, "yield_time_ms": 300}, "s1")))  # fmt: skip
    session = started.session_id
    assert session
    parked = _execute(router, ALICE, turn=turn(), item=function_item(
        "exec_command", {"cmd": "git push origin main; echo pushed", "login": False}, "p1"))  # fmt: skip
    approval = parked[-1].approval_required
    assert approval.approval_id

    # Bob names the same thread id: every lookup is NOT_FOUND, nothing of Alice's changes.
    list_req = router_pb2.ListSessionsRequest(thread_id=THREAD)
    assert _code(lambda: stub.ListSessions(list_req, metadata=BOB)) == grpc.StatusCode.NOT_FOUND
    term = router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=session)
    assert _code(lambda: stub.TerminateSession(term, metadata=BOB)) == grpc.StatusCode.NOT_FOUND
    intr = router_pb2.InterruptRequest(thread_id=THREAD, call_id="s1")
    assert _code(lambda: stub.Interrupt(intr, metadata=BOB)) == grpc.StatusCode.NOT_FOUND
    ended = stub.EndThread(router_pb2.EndThreadRequest(thread_id=THREAD), metadata=BOB)
    assert (ended.terminated_sessions, ended.dropped_pending_approvals) == (0, 0)
    resume = router_pb2.ResumeCall(
        approval_id=approval.approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
    )
    assert _code(lambda: _execute(router, BOB, resume=resume)) == grpc.StatusCode.NOT_FOUND
    # write_stdin into Alice's session id from Bob's side reaches no process of hers.
    poked = completed(_execute(router, BOB, turn=turn(), item=function_item(
        "write_stdin", {"session_id": session, "chars": "from-bob\n"}, "w1")))  # fmt: skip
    assert "from-bob" not in poked.output_text
    assert "Unknown process id" in poked.output_text, poked.output_text
    # Bob's own use of the same id is his own thread: a git push still asks him.
    bob_push = _execute(router, BOB, turn=turn(), item=function_item(
        "exec_command", {"cmd": "git push origin main; echo pushed", "login": False}, "p2"))  # fmt: skip
    assert bob_push[-1].WhichOneof("event") == "approval_required"

    # Alice still has everything, untouched.
    sessions = stub.ListSessions(list_req, metadata=ALICE).sessions
    assert [s.session_id for s in sessions] == [session] and sessions[0].running
    echoed = completed(_execute(router, ALICE, turn=turn(), item=function_item(
        "write_stdin", {"session_id": session, "chars": "from-alice\n", "yield_time_ms": 500},
        "w2")))  # fmt: skip
    assert "from-alice" in echoed.output_text and "from-bob" not in echoed.output_text
    resume_session = router_pb2.ResumeCall(
        approval_id=approval.approval_id,
        decision=router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
    )
    done = completed(_execute(router, ALICE, resume=resume_session))
    assert done.output_text.rstrip().endswith("pushed")
    # Alice's session grant is hers: Bob's identical command still parks.
    again = _execute(router, BOB, turn=turn(), item=function_item(
        "exec_command", {"cmd": "git push origin main; echo pushed", "login": False}, "p3"))  # fmt: skip
    assert again[-1].WhichOneof("event") == "approval_required"
    stub.EndThread(router_pb2.EndThreadRequest(thread_id=THREAD), metadata=ALICE)
    stub.EndThread(router_pb2.EndThreadRequest(thread_id=THREAD), metadata=BOB)


def test_another_subject_cannot_interrupt_a_running_call(router: Router) -> None:
    events: list[router_pb2.ExecuteResponse] = []

    def run() -> None:
        events.extend(_execute(router, ALICE, turn=turn(), item=function_item(
            "exec_command", {"cmd": "sleep 1.5; echo survived", "yield_time_ms": 10_000,
                             "login": False}, "long")))  # fmt: skip

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    intr = router_pb2.InterruptRequest(thread_id=THREAD, call_id="long")
    assert _code(lambda: router.stub.Interrupt(intr, metadata=BOB)) == grpc.StatusCode.NOT_FOUND
    worker.join(30)
    assert "survived" in completed(events).output_text
