"""Redis as a real dependency of the fleet (docs/scaling.md): stopped, restarted with AOF,
restarted without it. One fleet: two router processes, one redis-server, one daemon.

Redis stopped: the `shellgate.v1.SharedState` health name goes NOT_SERVING within seconds
while the overall status stays SERVING, a local call without approval still runs, and the
metric and the log say why. Restarted with AOF: the same routers serve calls needing shared
state again and a remote session stays pollable. Restarted without AOF: the documented loss
(an "approved for session" decision) happens, but the remote session is re-published by
the replicas that knew it, so its process stays owned (pollable and terminable).
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import router_pb2

from tests.integration.replicas import Replica, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

SHARED = "shellgate.v1.SharedState"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
THREAD = "redis-dep"


def run(
    replica: Replica, name: str, args: Mapping[str, object], call_id: str, env: str = "box1"
) -> list[router_pb2.ExecuteResponse]:
    """All events of one Execute on THREAD."""
    if name != "write_stdin":
        args = {"login": False, **args}
    request = router_pb2.ExecuteRequest(
        thread_id=THREAD,
        turn=turn(environment_id=env),
        item=function_item(name, dict(args), call_id),
    )
    return replica.execute(request)


def body(events: list[router_pb2.ExecuteResponse]) -> str:
    """The model text after `Output:`."""
    return completed(events).output_text.split("Output:\n", 1)[1]


def health(replica: Replica, service: str) -> int:
    """The replica's health status for `service`."""
    stub = health_pb2_grpc.HealthStub(replica.channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


def metrics(replica: Replica) -> str:
    """The replica's Prometheus text (its port is in its log)."""
    port = re.findall(r"metrics listening on port (\d+)", replica.log())[-1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


def write(replica: Replica, sid: int, chars: str, call_id: str) -> str:
    """What a session answers to `chars`."""
    args = {"session_id": sid, "chars": chars, "yield_time_ms": 1000}
    return body(run(replica, "write_stdin", args, call_id))


def approve_for_session(replica: Replica, call_id: str) -> None:
    """Ask for `touch` (a prompt rule) and approve it for the session on the same replica."""
    events = run(replica, "exec_command", {"cmd": "touch approved.txt"}, call_id)
    assert events[-1].WhichOneof("event") == "approval_required"
    request = router_pb2.ExecuteRequest(
        thread_id=THREAD,
        resume=router_pb2.ResumeCall(
            approval_id=events[-1].approval_required.approval_id,
            decision=router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
        ),
    )
    assert completed(replica.execute(request)).exit_code == 0


def test_redis_stop_and_restarts(tmp_path: Path) -> None:
    rules = 'prefix_rule(pattern=["touch"], decision="prompt")\n'
    config = 'metrics_listen = "127.0.0.1:0"\n'
    with fleet(tmp_path, routers=2, daemons=1, aof=True, rules=rules, extra_config=config) as f:
        r0, r1 = f.routers
        sid = completed(run(r0, "exec_command", {"cmd": "cat", "tty": True,
                                                 "yield_time_ms": 300}, "c1")).session_id  # fmt: skip
        assert write(r1, sid, "one\n", "c2") == "one\r\none\r\n"
        assert [health(r, SHARED) for r in (r0, r1)] == [SERVING, SERVING]

        # --- Redis stopped -------------------------------------------------------------
        f.redis.stop(kill=True)
        # Noticed within 5 s (the store probe's interval is well below it).
        eventually(lambda: health(r1, SHARED) == NOT_SERVING, "r1 SharedState down", 5, 0.1)
        # Degraded, not down: the load balancer keeps the replicas (docs/scaling.md).
        assert health(r1, "") == SERVING
        local = run(r0, "shell_command", {"command": "echo local-ok"}, "l1", env="local")
        assert body(local) == "local-ok\n"
        needs_store = completed(run(r0, "exec_command", {"cmd": "touch nope.txt"}, "l2"))
        assert "shared thread state unavailable" in needs_store.output_text
        eventually(lambda: health(r0, SHARED) == NOT_SERVING, "r0 SharedState down", 10, 0.1)
        text = metrics(r0)
        assert "shellgate_shared_state_up 0" in text
        assert re.search(r'shellgate_shared_state_errors_total\{op="[a-z_]+"\} [1-9]', text)
        assert "shared state unreachable" in r0.log()

        # --- restarted with AOF: same routers, nothing lost ----------------------------
        f.redis.start(aof=True)
        eventually(lambda: health(r0, SHARED) == SERVING and health(r1, SHARED) == SERVING,
                   "SharedState back", 15, 0.1)  # fmt: skip
        assert "shellgate_shared_state_up 1" in metrics(r0)
        assert "shared state reachable again" in r0.log()
        assert write(r0, sid, "two\n", "c3") == "two\r\ntwo\r\n"
        approve_for_session(r1, "a1")
        again = run(r0, "exec_command", {"cmd": "touch approved.txt"}, "a2")
        assert completed(again).exit_code == 0  # the grant survived in Redis

        # --- restarted without AOF: Redis comes back empty -----------------------------
        f.redis.stop(kill=True)
        eventually(lambda: health(r0, SHARED) == NOT_SERVING, "r0 SharedState down again", 10, 0.1)
        f.redis.start(aof=False)
        eventually(lambda: "shellgate_shared_state_resets_total 1" in metrics(r0)
                   and "shellgate_shared_state_resets_total 1" in metrics(r1),
                   "both replicas saw the data loss", 15, 0.1)  # fmt: skip
        assert "shared state lost its data" in r1.log()
        # Documented loss: the "approved for session" decision is gone, it is asked again.
        asked = run(r1, "exec_command", {"cmd": "touch approved.txt"}, "a3")
        assert asked[-1].WhichOneof("event") == "approval_required"
        # Not orphaned: the replicas re-published the session, which is still owned.
        assert write(r1, sid, "three\n", "c4") == "three\r\nthree\r\n"
        reply = r0.stub.TerminateSession(
            router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=sid), timeout=10
        )
        assert reply.was_running
