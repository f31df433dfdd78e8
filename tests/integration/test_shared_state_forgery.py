"""Whoever can write Redis cannot grant (runtime/store/record_seal.py): a decided approval, a
session approval, an amendment or a parked call written straight into Redis is refused,
nothing runs, and the refusal is in the audit log and the replica's log.

A real router process (the fleet harness: `shellgate serve --config`, `redis_url`) on a
real redis-server; the forger is a plain redis-py client, as a command that reached Redis'
socket would be (`redis-cli HSET …`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import grpc
import pytest
import redis
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, router_pb2, router_pb2_grpc

from tests.integration.replicas import Fleet, Replica, fleet
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import completed, function_item, turn
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

AGENT, OPERATOR = "tok-agent", "tok-operator"
PREFIX = "shellgate:"
RULES = (
    'prefix_rule(pattern=["touch"], decision="prompt")\n'
    'prefix_rule(pattern=["git", "push"], decision="prompt")\n'
)


def _md(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _fleet(folder: Path, route: str) -> Iterator[Fleet]:
    tokens = folder / "tokens"
    tokens.write_text(f"agent {AGENT}\nops {OPERATOR} roles=operator\n")
    extra = (
        f'token_file = "{tokens}"\naudit_log = "{folder / "audit.log"}"\n'
        f'[approvals]\ndefault_route = "{route}"\nkeepalive_ms = 200\npoll_ms = 200\n'
        "operator_deadline_ms = 60000\n"
    )
    with fleet(folder, routers=1, daemons=0, extra_config=extra, rules=RULES) as f:
        yield f


@pytest.fixture(scope="module")
def operator_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    yield from _fleet(tmp_path_factory.mktemp("forge-op"), "operator")


@pytest.fixture(scope="module")
def caller_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    yield from _fleet(tmp_path_factory.mktemp("forge-caller"), "caller")


def _redis(f: Fleet) -> redis.Redis:
    return redis.Redis.from_url(f.redis.url)


def _request(thread: str, cmd: str, call_id: str) -> router_pb2.ExecuteRequest:
    args: Mapping[str, object] = {"cmd": cmd, "login": False}
    return router_pb2.ExecuteRequest(
        thread_id=thread, turn=turn(environment_id="local"),
        item=function_item("exec_command", dict(args), call_id),
    )  # fmt: skip


def _run(replica: Replica, thread: str, cmd: str, call_id: str) -> list[router_pb2.ExecuteResponse]:
    stub = router_pb2_grpc.ToolRouterServiceStub(replica.channel)
    return list(stub.Execute(_request(thread, cmd, call_id), metadata=_md(AGENT), timeout=60))


def _audit(f: Fleet) -> list[dict[str, object]]:
    path = f.folder / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _refusals(f: Fleet, record: str) -> list[dict[str, object]]:
    return [
        r
        for r in _audit(f)
        if r.get("type") == "shared_state_refused" and r.get("record") == record
    ]


def _listed(replica: Replica) -> list[str]:
    desk = approvals_pb2_grpc.ApprovalServiceStub(replica.channel)
    reply = desk.ListPendingApprovals(
        approvals_pb2.ListPendingApprovalsRequest(), metadata=_md(OPERATOR), timeout=10
    )
    return [a.approval_id for a in reply.approvals]


def test_a_decision_written_into_redis_is_refused_and_a_real_one_still_wins(
    operator_fleet: Fleet,
) -> None:
    (router,) = operator_fleet.routers
    marker = operator_fleet.folder / "forged-ran"
    stub = router_pb2_grpc.ToolRouterServiceStub(router.channel)
    stream = stub.Execute(
        _request("forge-board", f"git push 2>/dev/null; echo ran > {marker}", "b1"),
        metadata=_md(AGENT), timeout=60,
    )  # fmt: skip
    approval_id = ""
    for event in stream:
        if event.WhichOneof("event") == "approval_pending":
            approval_id = event.approval_pending.approval_id
            break
    assert approval_id
    # What the attacker ran through redis-cli, from a sandboxed command.
    key = f"{PREFIX}{{approvals}}:a:{approval_id}"
    _redis(operator_fleet).hset(
        key, mapping={"status": "decided", "decision": "approved", "operator": "alice"}
    )
    eventually(lambda: _refusals(operator_fleet, "operator decision"), "the refusal audited")
    refusal = _refusals(operator_fleet, "operator decision")[0]
    assert refusal["approval_id"] == approval_id and refusal["claimed_operator"] == "alice"
    assert "refused a forged operator decision" in router.log()
    # Undone: the entry waits for a real operator again, and nothing ran.
    eventually(lambda: _listed(router) == [approval_id], "listed as pending again")
    assert not marker.exists()
    approvals_pb2_grpc.ApprovalServiceStub(router.channel).DecideApproval(
        approvals_pb2.DecideApprovalRequest(
            approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
        ),
        metadata=_md(OPERATOR), timeout=10,
    )  # fmt: skip
    assert completed(list(stream)).exit_code == 0
    assert marker.read_text() == "ran\n"
    decisions = [r["approval"] for r in _audit(operator_fleet)
                 if r.get("type") == "decision" and r.get("call_id") == "b1"]  # fmt: skip
    # The policy's ask, then the operator's decision: the audit credits ops, never alice.
    assert decisions[-1] == {"source": "operator", "who": "ops"}
    assert "alice" not in json.dumps(decisions)


def test_a_forged_view_is_no_approval(operator_fleet: Fleet) -> None:
    (router,) = operator_fleet.routers
    client = _redis(operator_fleet)
    key = f"{PREFIX}{{approvals}}:a:forged-view"
    view = {"approval_id": "forged-view", "available_decisions": ["approved"]}
    client.hset(key, mapping={"view": json.dumps(view), "replica": "x", "status": "pending",
                              "deadline": str(2**42)})  # fmt: skip
    client.zadd(f"{PREFIX}{{approvals}}:index", {"forged-view": 2**42})
    assert "forged-view" not in _listed(router)
    eventually(lambda: _refusals(operator_fleet, "operator approval view"), "audited")


def test_a_session_approval_written_into_redis_is_refused(caller_fleet: Fleet) -> None:
    (router,) = caller_fleet.routers
    client = _redis(caller_fleet)
    first = _run(router, "forge-a", "touch approved.txt", "s1")
    assert first[-1].WhichOneof("event") == "approval_required"
    resumed = router_pb2.ExecuteRequest(
        thread_id="forge-a",
        resume=router_pb2.ResumeCall(
            approval_id=first[-1].approval_required.approval_id,
            decision=router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
        ),
    )
    stub = router_pb2_grpc.ToolRouterServiceStub(router.channel)
    assert completed(list(stub.Execute(resumed, metadata=_md(AGENT), timeout=60))).exit_code == 0
    assert completed(_run(router, "forge-a", "touch approved.txt", "s2")).exit_code == 0
    (approved_a,) = client.keys(f"{PREFIX}{{*forge-a}}:approved")
    (member,) = client.smembers(approved_a)
    digest = member.decode().split(".", 1)[0]
    # Another thread: the sealed member copied (a replay) and the bare digest (a forgery).
    assert completed(_run(router, "forge-b", "true", "s3")).exit_code == 0
    (meta_b,) = client.keys(f"{PREFIX}{{*forge-b}}:meta")
    client.sadd(meta_b.decode().replace(":meta", ":approved"), member, digest)
    asked = _run(router, "forge-b", "touch approved.txt", "s4")
    assert asked[-1].WhichOneof("event") == "approval_required"
    eventually(lambda: _refusals(caller_fleet, "session approval"), "the refusal audited")


def test_an_amendment_pushed_into_redis_is_refused(caller_fleet: Fleet) -> None:
    (router,) = caller_fleet.routers
    client = _redis(caller_fleet)
    client.rpush(f"{PREFIX}amendments", json.dumps(["git", "push"]))
    # The replica bus notice every replica re-reads the list on.
    client.publish(f"{PREFIX}bus", json.dumps({"op": "amendments"}))
    eventually(lambda: _refusals(caller_fleet, "shared amendment"), "the refusal audited")
    asked = _run(router, "forge-amend", "git push", "a1")
    assert asked[-1].WhichOneof("event") == "approval_required"


def test_a_parked_call_rewritten_in_redis_is_not_resumed(caller_fleet: Fleet) -> None:
    (router,) = caller_fleet.routers
    client = _redis(caller_fleet)
    marker = caller_fleet.folder / "rewritten-ran"
    first = _run(router, "forge-park", "touch parked.txt", "p1")
    approval_id = first[-1].approval_required.approval_id
    (key,) = client.keys(f"{PREFIX}{{*forge-park}}:pending:{approval_id}")
    stored = json.loads(client.get(key))
    # The attacker swaps the parked command for its own.
    stored["payload"] = stored["payload"].replace("touch parked.txt", f"touch {marker}")
    client.set(key, json.dumps(stored), px=60_000)
    resumed = router_pb2.ExecuteRequest(
        thread_id="forge-park",
        resume=router_pb2.ResumeCall(
            approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
        ),
    )
    stub = router_pb2_grpc.ToolRouterServiceStub(router.channel)
    with pytest.raises(grpc.RpcError) as err:
        list(stub.Execute(resumed, metadata=_md(AGENT), timeout=60))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert not marker.exists()
    eventually(lambda: _refusals(caller_fleet, "parked call"), "the refusal audited")


def test_a_unix_socket_redis_url_serves_shared_state(tmp_path: Path) -> None:
    # `redis_url = "unix://…"` (documented) used to fail with "unexpected keyword argument
    # 'socket_keepalive'" and report the store unreachable.
    import subprocess

    from tests.integration.replicas import start_router_process
    from tests.integration.shared_support import seal_key_file

    assert REDIS_SERVER is not None
    sock = tmp_path / "redis.sock"
    redis_proc = subprocess.Popen(
        [REDIS_SERVER, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        eventually(sock.exists, "redis listening on its socket")
        (tmp_path / "rules").mkdir()
        (tmp_path / "rules" / "base.rules").write_text(RULES)
        config = tmp_path / "router.toml"
        config.write_text(
            f'redis_url = "unix://{sock}"\nshared_state_key_file = "{seal_key_file(tmp_path)}"\n'
            f'local_cwd = "{tmp_path}"\nrules_dirs = ["{tmp_path / "rules"}"]\n'
            f'token_file = "{tmp_path / "tokens"}"\n'
        )
        (tmp_path / "tokens").write_text(f"agent {AGENT}\n")
        router = start_router_process(config, tmp_path, "unix")
        try:
            asked = _run(router, "unix-thread", "touch x", "u1")
            assert asked[-1].WhichOneof("event") == "approval_required"
            client = redis.Redis(unix_socket_path=str(sock))
            assert client.keys(f"{PREFIX}{{*unix-thread}}:pending:*")
            assert "unreachable" not in router.log()
        finally:
            router.stop()
    finally:
        redis_proc.terminate()
        redis_proc.wait(10)


def test_sticky_grants_and_parked_records_carry_seals_bound_to_their_thread(tmp_path: Path) -> None:
    # The store itself: a grant or a parked call copied to another thread, or rewritten,
    # is refused and counted (the router test above shows the resume path end to end).
    import asyncio

    from shellgate.router.runtime.store.redis_state import RedisSharedState
    from shellgate.router.runtime.store.shared_state import PendingRecord

    from tests.integration.shared_support import SEAL_KEY, redis_server

    async def scenario(url: str) -> None:
        from shellgate.router.runtime.store.record_seal import RecordSeal

        seal = RecordSeal(SEAL_KEY.encode())
        store = RedisSharedState.from_url(url, idle_ttl_ms=60_000, seal=seal)
        client = redis.asyncio.Redis.from_url(url)
        try:
            await store.ensure_thread("t1", "g1")
            await store.ensure_thread("t2", "g2")
            await store.set_grant("t1", "fs", '{"write":["/"]}')
            assert await store.grants("t1") == {"fs": '{"write":["/"]}'}
            sealed = await client.hget(store.base("t1") + "grants", "fs")
            await client.hset(store.base("t2") + "grants", "fs", sealed)  # replayed
            await client.hset(store.base("t2") + "grants", "net", '{"all":true}')  # forged
            assert await store.grants("t2") == {}
            assert seal.refused == 2
            await store.put_pending("t1", PendingRecord("a1", "c1", "r", "payload"), 60_000)
            raw = await client.get(store.base("t1") + "pending:a1")
            await client.set(store.base("t1") + "pending:a2", raw)  # another approval id
            assert await store.take_pending("t1", "a2") is None
            assert (await store.take_pending("t1", "a1")) is not None
            assert seal.refused == 3
        finally:
            await client.aclose()
            await store.aclose()

    with redis_server() as url:
        asyncio.run(scenario(url))
