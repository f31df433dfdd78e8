"""Any replica answers like one router (issue 15): one conversation, two ways, same answers.

One fleet (three router processes, one redis-server, two daemons). The same sequence of
operations on a thread runs twice: every call on replica r0 (one router), and each call on
the next replica in turn (r0, r1, r2, r0, …). Every answer the model or the harness sees —
completed texts, exit codes, approvals asked, sessions listed, EndThread's counts — must be
the same, once wall times, chunk ids and session ids are normalised. Afterwards no daemon
holds a process for either thread (the orphan check: the daemons' own process lists).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from shellgate.v1 import common_pb2, exec_pb2, exec_pb2_grpc, router_pb2

from tests.integration.replicas import TOKEN, Fleet, Replica, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

RULES = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
APPROVED_FOR_SESSION = router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION
_VOLATILE = (
    (re.compile(r"Wall time: [0-9.]+ seconds"), "Wall time: T seconds"),
    (re.compile(r"Chunk ID: \S+"), "Chunk ID: C"),
    (re.compile(r"session ID \d+"), "session ID S"),
)


@pytest.fixture(scope="module")
def the_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three replicas, one Redis, daemons box1 and box2, a prompt rule for touch."""
    with fleet(tmp_path_factory.mktemp("fleet"), routers=3, daemons=2, rules=RULES) as f:
        yield f


def _normal(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


class Conversation:
    """One thread driven through `pick()`: the replica for the next call."""

    def __init__(self, thread: str, pick: Callable[[], Replica]) -> None:
        self.thread = thread
        self.pick = pick
        self.sessions: dict[int, int] = {}  # real session id → its order of appearance

    def _session(self, real: int) -> int:
        return self.sessions.setdefault(real, len(self.sessions) + 1)

    def call(self, name: str, args: dict[str, Any], call_id: str, env: str = "box1") -> Any:
        """One tool call; what the model sees (normalised) or the approval asked."""
        if name == "exec_command":
            args = {"login": False, **args}
        request = router_pb2.ExecuteRequest(
            thread_id=self.thread,
            turn=turn(environment_id=env, approval=common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST),
            item=function_item(name, args, call_id),
        )
        return self._answer(self.pick().execute(request))

    def resume(self, approval_id: str, decision: Any) -> Any:
        """Resume a parked call."""
        request = router_pb2.ExecuteRequest(
            thread_id=self.thread,
            resume=router_pb2.ResumeCall(approval_id=approval_id, decision=decision),
        )
        return self._answer(self.pick().execute(request))

    def _answer(self, events: list[router_pb2.ExecuteResponse]) -> Any:
        last = events[-1]
        if last.WhichOneof("event") == "approval_required":
            ask = last.approval_required
            return ("approval", ask.approval_id, tuple(ask.argv), ask.reason, ask.kind)
        done = completed(events)
        session = self._session(done.session_id) if done.HasField("session_id") else None
        return (
            "completed", done.success, done.exit_code, done.termination, done.truncated,
            session, _normal(done.output_text),
        )  # fmt: skip

    def real_session(self, order: int) -> int:
        """The real id of the `order`-th session seen."""
        return next(real for real, seen in self.sessions.items() if seen == order)

    def list_sessions(self) -> list[tuple[object, ...]]:
        """ListSessions, with ids by order of appearance."""
        reply = self.pick().stub.ListSessions(
            router_pb2.ListSessionsRequest(thread_id=self.thread), timeout=30
        )
        return [
            (self._session(s.session_id), s.environment_id, tuple(s.argv), s.running, s.exit_code)
            for s in reply.sessions
        ]

    def end(self) -> tuple[int, int]:
        """EndThread's counts."""
        reply = self.pick().stub.EndThread(
            router_pb2.EndThreadRequest(thread_id=self.thread), timeout=30
        )
        return reply.terminated_sessions, reply.dropped_pending_approvals


def _script(talk: Conversation) -> list[Any]:
    """The operations, in order; each answer as the model or harness sees it."""
    seen: list[Any] = []
    seen.append(talk.call("exec_command", {"cmd": "printf 'a\\nb\\n'"}, "c1"))
    seen.append(talk.call("exec_command", {"cmd": "echo two; exit 3"}, "c2", env="box2"))
    # A session that outlives its first yield, polled to its end.
    slow = "for i in 1 2 3 4; do echo line$i; sleep 0.4; done"
    first = talk.call("exec_command", {"cmd": slow, "yield_time_ms": 250}, "c3")
    seen.append(first[:5])  # its text depends on timing; the later polls gather the rest
    assert first[5] is not None, first
    session = talk.real_session(first[5])
    seen.append(talk.list_sessions())
    texts = [first[6]]
    for index in range(20):
        poll = talk.call(
            "write_stdin", {"session_id": session, "chars": "", "yield_time_ms": 3000}, f"p{index}"
        )
        texts.append(poll[6])
        if poll[5] is None:  # exited: no session id any more
            seen.append(poll[1:3])
            break
    else:
        raise AssertionError("the session never exited")
    seen.append(re.findall(r"line\d", "".join(texts)))
    seen.append(talk.list_sessions())
    # An approval: asked, approved for the session, then not asked again.
    ask = talk.call("exec_command", {"cmd": "touch f1 && echo touched"}, "c4")
    assert ask[0] == "approval", ask
    seen.append(ask[2:])
    seen.append(talk.resume(ask[1], APPROVED_FOR_SESSION))
    seen.append(talk.call("exec_command", {"cmd": "touch f1 && echo touched"}, "c5"))
    # A session left running, then the thread ends: its process must die.
    seen.append(talk.call("exec_command", {"cmd": "sleep 60", "yield_time_ms": 250}, "c6")[:6])
    seen.append(talk.end())
    return seen


def _daemon_processes(fleet_: Fleet) -> list[tuple[str, str]]:
    """Every process the daemons still hold as running (any caller with the fleet token)."""
    running = []
    for daemon in fleet_.daemons:
        with grpc.insecure_channel(daemon.target) as channel:
            stub = exec_pb2_grpc.ExecServiceStub(channel)
            reply = stub.List(
                exec_pb2.ListRequest(), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10
            )
            running += [
                (daemon.target, p.process_id)
                for p in reply.processes
                if p.state
                in (exec_pb2.PROCESS_STATE_RUNNING, exec_pb2.PROCESS_STATE_AWAITING_INPUT)
            ]
    return running


def test_round_robin_answers_like_one_router(the_fleet: Fleet) -> None:
    r0 = the_fleet.routers[0]
    single = _script(Conversation("eq-single", lambda: r0))
    spread_order = itertools.cycle(the_fleet.routers[:3])
    spread = _script(Conversation("eq-spread", lambda: next(spread_order)))
    assert spread == single
    assert single[-1] == (1, 0)  # EndThread killed the sleep session, nothing was pending
    assert _daemon_processes(the_fleet) == []
