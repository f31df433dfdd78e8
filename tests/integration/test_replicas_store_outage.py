"""Remote sessions lose nothing when Redis or a replica fails (issue 30): two replicas,
one daemon.

A session started while Redis is down is answered normally by its replica, which keeps it
and publishes it as soon as Redis is back; the other replica meanwhile answers
UNAVAILABLE (never `Unknown process id`), and polls it afterwards from where the owner
left off. An exit reported while Redis is down keeps its output; its record goes once
Redis is back. Redis persists (AOF) and is SIGKILLed, as the fault soak does. A replica
that took a poll's output from the daemon and died before storing its answer loses none
of it: the daemon holds that drain until a poll acknowledges it (two-phase Drain).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import redis
from shellgate.v1 import router_pb2, session_output_pb2, session_output_pb2_grpc

from tests.integration.replicas import TOKEN, Fleet, body, fleet, request, run
from tests.integration.shared_support import REDIS_SERVER
from tests.proc_scan import pids_with
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def the_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with fleet(tmp_path_factory.mktemp("fleet"), routers=2, daemons=1, aof=True) as running:
        yield running


def sessions(f: Fleet, index: int, thread: str) -> list[tuple[int, bool]]:
    """(id, running) of the thread's sessions through one replica."""
    reply = f.routers[index].stub.ListSessions(
        router_pb2.ListSessionsRequest(thread_id=thread), timeout=10
    )
    return [(s.session_id, s.running) for s in reply.sessions]


def poll_text(f: Fleet, index: int, thread: str, sid: int, call_id: str) -> str:
    """The output text of one poll (raises grpc.RpcError as the router answers)."""
    done = run(f.routers[index], thread, "write_stdin",
               {"session_id": sid, "chars": "", "yield_time_ms": 500}, call_id)  # fmt: skip
    return done.output_text


def test_a_session_started_while_redis_is_down_is_answered_then_shared(the_fleet: Fleet) -> None:
    r0 = the_fleet.routers[0]
    thread = "outage-start"
    assert run(r0, thread, "exec_command", {"cmd": "true"}, "o0").exit_code == 0
    run(the_fleet.routers[1], thread, "exec_command", {"cmd": "true"}, "o0b")
    cmd = "echo first; sleep 2; seq 1 5; sleep 34.25"
    the_fleet.redis.stop(kill=True)
    try:
        started = run(r0, thread, "exec_command", {"cmd": cmd, "yield_time_ms": 700}, "o1")
        # Answered as with Redis up: the first yield's output and a live session.
        assert body(started) == "first\n" and started.HasField("session_id")
        sid = started.session_id
        # The other replica cannot know it yet: unavailable, not unknown.
        try:
            text = poll_text(the_fleet, 1, thread, sid, "o2")
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
        else:
            assert "shared thread state unavailable" in text, text
            assert "Unknown process id" not in text
    finally:
        the_fleet.redis.start()
    time.sleep(2.0)  # "1".."5" are printed meanwhile
    # Polled on the other replica once the owner has published it: the output after the
    # first yield, once.
    attempts = iter(range(100))  # a new call id per attempt: an answer is kept per call id
    text = eventually(
        lambda: _answered(poll_text(the_fleet, 1, thread, sid, f"o3-{next(attempts)}")),
        "the other replica polls the session", 15, 0.3, ignoring=(grpc.RpcError,),
    )  # fmt: skip
    assert re.findall(r"^\d+$", text.split("Output:\n", 1)[1], re.M) == ["1", "2", "3", "4", "5"]
    assert sessions(the_fleet, 1, thread) == [(sid, True)]
    reply = r0.stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=thread, session_id=sid), timeout=10
    )
    assert reply.was_running
    eventually(lambda: pids_with("sleep\x0034.25") == [], "the session's process gone", 10, 0.2)


def _answered(text: str) -> str | None:
    # A poll answered `shared thread state unavailable` (the store still waking) is retried.
    return text if "Output:\n" in text else None


def test_an_exit_reported_while_redis_is_down_keeps_its_output(the_fleet: Fleet) -> None:
    r0 = the_fleet.routers[0]
    thread = "outage-exit"
    assert run(r0, thread, "exec_command", {"cmd": "true"}, "e0").exit_code == 0
    call = request(thread, "exec_command",
                   {"cmd": "echo before; sleep 1.5; echo after", "yield_time_ms": 8_000}, "e1")  # fmt: skip
    events = r0.stub.Execute(call, timeout=60)
    first = next(events)  # the projection: the call runs; Redis goes away during its yield
    assert first.WhichOneof("event") == "projection"
    time.sleep(0.5)
    the_fleet.redis.stop(kill=True)
    try:
        rest = list(events)
    finally:
        the_fleet.redis.start()
    done = rest[-1].completed
    assert rest[-1].WhichOneof("event") == "completed", rest[-1]
    assert body(done) == "before\nafter\n" and done.exit_code == 0
    assert not done.HasField("session_id")
    # The record of the ended session is deleted once Redis is back.
    eventually(lambda: sessions(the_fleet, 1, thread) == [], "no record left", 15, 0.3,
               ignoring=(grpc.RpcError,))  # fmt: skip


def _consumed_seq(f: Fleet, thread: str, sid: int) -> int:
    # The thread's keys are named after its owned key (the caller's subject and the id).
    client = redis.Redis.from_url(f.redis.url)
    try:
        keys = [k for k in client.scan_iter(match=f"*:sess:{sid}") if thread.encode() in k]
        assert len(keys) == 1, keys
        raw = client.get(keys[0])
    finally:
        client.close()
    assert raw is not None
    return int(json.loads(raw)["consumed_seq"])


def _drain(
    f: Fleet, process_id: str, *, hold: bool, acknowledged: int
) -> session_output_pb2.DrainResponse:
    """SessionOutputService.Drain on the daemon, as the routers' caller."""
    with grpc.insecure_channel(f.daemons[0].target) as channel:
        reply: session_output_pb2.DrainResponse = session_output_pb2_grpc.SessionOutputServiceStub(
            channel
        ).Drain(
            session_output_pb2.DrainRequest(process_id=process_id, hold=hold,
                                            acknowledged_through_seq=acknowledged),
            metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10,
        )  # fmt: skip
    return reply


def test_a_replica_dying_between_the_drain_and_its_answer_loses_nothing(the_fleet: Fleet) -> None:
    f = the_fleet
    r0 = f.routers[0]
    thread = "died-mid-poll"
    cmd = "echo a; sleep 1.5; echo b; sleep 1.5; echo c; sleep 34.75"
    events = list(r0.execute(request(thread, "exec_command", {"cmd": cmd, "yield_time_ms": 500},
                                     "d1"), timeout=60))  # fmt: skip
    process_id = next(e.started.process_id for e in events if e.WhichOneof("event") == "started")
    first = events[-1].completed
    assert body(first) == "a\n" and first.HasField("session_id")
    sid = first.session_id
    time.sleep(1.7)  # "b" is printed
    # A replica re-attaches, takes "b" from the daemon as every poll does (two-phase,
    # acknowledging what the record stored) and is SIGKILLed before it stores its answer.
    stored = _consumed_seq(f, thread, sid)
    taken = _drain(f, process_id, hold=True, acknowledged=stored)
    assert taken.head + taken.tail == b"b\n"
    time.sleep(1.7)  # "c" is printed
    # The next poll (another replica, a new call) gets "b" again, then "c": nothing lost.
    polled = poll_text(f, 1, thread, sid, "d2")
    assert polled.split("Output:\n", 1)[1] == "b\nc\n", polled
    # That replica's own drain was held too: had it died before storing, a poll that
    # acknowledges only the older record would get its bytes again.
    # (Held again here, as that dead replica's successor would; the next poll acknowledges it.)
    held = _drain(f, process_id, hold=True, acknowledged=stored)
    assert held.head + held.tail == b"b\nc\n"
    # The answer of d2 was stored: the poll after it acknowledges it and repeats nothing.
    again = poll_text(f, 0, thread, sid, "d3")
    assert again.split("Output:\n", 1)[1] == "", again
    r0.stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=thread, session_id=sid), timeout=10
    )
    eventually(lambda: pids_with("sleep\x0034.75") == [], "the session's process gone", 10, 0.2)


def test_a_replica_that_first_sees_a_thread_during_the_outage_publishes_its_session(
    the_fleet: Fleet,
) -> None:
    f = the_fleet
    thread = "outage-new-replica"
    assert run(f.routers[0], thread, "exec_command", {"cmd": "true"}, "n0").exit_code == 0
    late = f.start_router("late")  # has never seen the thread
    f.redis.stop(kill=True)
    try:
        # Its part of the thread is provisional (a generation of its own), its session held.
        cmd = "echo first; sleep 1.5; echo second; sleep 35.25"
        started = run(late, thread, "exec_command", {"cmd": cmd, "yield_time_ms": 500}, "n1")
        assert body(started) == "first\n" and started.HasField("session_id")
    finally:
        f.redis.start()
    time.sleep(1.7)
    # Once Redis is back the replica joins the thread Redis has and publishes the session.
    attempts = iter(range(100))
    text = eventually(
        lambda: _answered(poll_text(f, 0, thread, started.session_id, f"n2-{next(attempts)}")),
        "the first replica polls the late replica's session", 15, 0.3, ignoring=(grpc.RpcError,),
    )  # fmt: skip
    assert text.split("Output:\n", 1)[1] == "second\n", text
    f.routers[0].stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=thread, session_id=started.session_id),
        timeout=10,
    )
    eventually(lambda: pids_with("sleep\x0035.25") == [], "the session's process gone", 10, 0.2)
    late.stop()



def _yield_across_an_outage(f: Fleet, index: int, call: router_pb2.ExecuteRequest) -> Any:
    """One poll's `completed` when Redis is SIGKILLed during its yield (restarted after)."""
    events = f.routers[index].stub.Execute(call, timeout=60)
    first = next(events)  # the projection: the call runs (a first yield: published)
    assert first.WhichOneof("event") == "projection", first
    time.sleep(0.6)
    f.redis.stop(kill=True)
    try:
        rest = list(events)
    finally:
        f.redis.start()
    assert rest[-1].WhichOneof("event") == "completed", rest[-1]
    return rest[-1].completed


def _lines(text: str) -> list[str]:
    return re.findall(r"^\d+$", text.split("Output:\n", 1)[1], re.M)


def test_a_poll_whose_position_the_outage_kept_is_not_repeated_elsewhere(the_fleet: Fleet) -> None:
    # The record still names the position before a poll the outage kept from storing its
    # own, and the daemon hands a drain nobody acknowledged to the next poll: unless the
    # replica holds the session and its lease until it has stored the position, the next
    # poll (the other replica) repeats that answer.
    f = the_fleet
    thread = "outage-position"
    assert run(f.routers[0], thread, "exec_command", {"cmd": "true"}, "p0").exit_code == 0
    run(f.routers[1], thread, "exec_command", {"cmd": "true"}, "p0b")
    cmd = "seq 1 3; sleep 3; seq 4 6; sleep 9; seq 7 9; sleep 34.5"
    # A first yield (published when it began) during which Redis goes away.
    first = _yield_across_an_outage(
        f, 0, request(thread, "exec_command", {"cmd": cmd, "yield_time_ms": 1_500}, "p1")
    )
    assert body(first) == "1\n2\n3\n" and first.HasField("session_id"), first
    sid = first.session_id
    time.sleep(2.5)  # "4".."6" are printed (an empty poll then waits 5 s: "7".."9" are not)
    attempts = iter(range(100))
    second = eventually(
        lambda: _answered(poll_text(f, 1, thread, sid, f"p2-{next(attempts)}")),
        "the other replica polls the session", 15, 0.3, ignoring=(grpc.RpcError,),
    )  # fmt: skip
    assert _lines(second) == ["4", "5", "6"], second
    # A re-attached poll (the first replica again) during which Redis goes away.
    third = _yield_across_an_outage(f, 0, request(
        thread, "write_stdin", {"session_id": sid, "chars": "", "yield_time_ms": 5_000}, "p3"
    ))  # fmt: skip
    assert _lines(third.output_text) == ["7", "8", "9"], third.output_text
    fourth = eventually(
        lambda: _answered(poll_text(f, 1, thread, sid, f"p4-{next(attempts)}")),
        "the other replica polls the session again", 15, 0.3, ignoring=(grpc.RpcError,),
    )  # fmt: skip
    assert _lines(fourth) == [], fourth
    f.routers[1].stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=thread, session_id=sid), timeout=10
    )
    eventually(lambda: pids_with("sleep\x0034.5") == [], "the session's process gone", 10, 0.2)
