"""Every configured limit of both daemons, crossed through the real gRPC API (issue 14).

The keys come from the config dataclasses, so a new limit without a row here fails
`test_every_limit_key_has_a_row`. Each row sets a small value, crosses it and checks the
documented answer (docs/limits.md): RESOURCE_EXHAUSTED, or INVALID_ARGUMENT for a request
field's size, with an ErrorInfo whose metadata `limit` names the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.common.grpc.connections import ConnectionLimits
from shellgate.common.grpc.status import LIMIT_KEY, error_info
from shellgate.execserver.config import ServerConfig
from shellgate.router.service.config import Limits
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc
from shellgate.v1 import exec_pb2 as pb

from tests.execserver_harness import daemon_config, exec_stub, in_process_daemon, start_request
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)
from tests.waiting import eventually, eventually_async

RE = grpc.StatusCode.RESOURCE_EXHAUSTED
INVALID = grpc.StatusCode.INVALID_ARGUMENT
# Router [limits] keys that are not bounds a request can cross, and where they are exercised.
ROUTER_TIMINGS = {
    "admission_wait_ms": "how long a call waits for a slot: the admission rows",
    "sweep_interval_ms": "how often expiry runs: the thread_idle_ttl_ms row",
    "shutdown_grace_ms": "shutdown: tests/integration/test_runtime_lifecycle.py",
    "projection_workers": "a pool size, not a bound: tests/integration/test_hostile_cost.py",
    "completed_call_ttl_ms": "retries: tests/integration/test_call_idempotency.py",
}
ALICE = "alice-limits-2f6a0c9d41"
BOB = "bob-limits-8e1b7d3c52"


def refused(err: grpc.RpcError, code: grpc.StatusCode, key: str) -> None:
    """The call ended with `code` and an ErrorInfo naming `key` (never a bare status)."""
    assert err.code() == code, (err.code(), err.details())
    info = error_info(err)
    assert info is not None, err.details()
    assert info.metadata.get(LIMIT_KEY) == key, (dict(info.metadata), err.details())
    assert key in (err.details() or ""), err.details()


def exec_item(cmd: str, call_id: str = "c1", **args: Any) -> common_pb2.ToolCallItem:
    """An exec_command item (no login shell: faster)."""
    return function_item("exec_command", {"cmd": cmd, "login": False, **args}, call_id)


LIVE = exec_item("sleep 30", call_id="live", yield_time_ms=250)


def ask_turn() -> common_pb2.TurnContext:
    """A turn whose non-safe commands park for approval."""
    return turn(approval=common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED)


@dataclasses.dataclass
class Scene:
    """One running router for a row, with helpers."""

    router: Router
    tmp: Path

    def run(self, thread: str, item: common_pb2.ToolCallItem, **kw: Any) -> Any:
        """The Execute's events."""
        wire_turn = kw.get("t") if kw.get("t") is not None else turn()
        req = router_pb2.ExecuteRequest(thread_id=thread, turn=wire_turn, item=item)
        return execute(self.router.stub, req)

    def refuses(self, code: grpc.StatusCode, key: str, call: Callable[[], object]) -> None:
        """`call` fails naming `key`."""
        with pytest.raises(grpc.RpcError) as err:
            call()
        refused(err.value, code, key)

    def park(self, thread: str, call_id: str = "c1") -> str:
        """A call parked for approval; its approval id."""
        events = self.run(thread, exec_item("touch parked", call_id), t=ask_turn())
        assert events[-1].WhichOneof("event") == "approval_required", events[-1]
        return str(events[-1].approval_required.approval_id)

    def sessions(self, thread: str) -> list[int]:
        """Session ids of a thread."""
        reply = self.router.stub.ListSessions(
            router_pb2.ListSessionsRequest(thread_id=thread), timeout=10
        )
        return [s.session_id for s in reply.sessions]


@contextlib.contextmanager
def _scene(tmp: Path, **limits: Any) -> Iterator[Scene]:
    extra = limits.pop("config", {})
    config = router_config(
        local_cwd=str(tmp), limits=Limits(shutdown_grace_ms=500, **limits), **extra
    )
    with running_router(config) as router:
        yield Scene(router, tmp)


def _held_execute(scene: Scene, metadata: Any = None) -> Any:
    """An Execute stream that holds its slot until cancelled (its first event received)."""
    req = router_pb2.ExecuteRequest(
        thread_id=f"hold-{time.monotonic_ns()}",
        turn=turn(),
        item=exec_item("sleep 20", yield_time_ms=20_000),
    )
    stream = scene.router.stub.Execute(req, timeout=30, metadata=metadata)
    next(stream)
    return stream


# --- router rows ------------------------------------------------------------------------


def row_max_concurrent_executes(tmp: Path) -> None:
    with _scene(tmp, max_concurrent_executes=1) as scene:
        held = _held_execute(scene)
        scene.refuses(RE, "limits.max_concurrent_executes", lambda: scene.run("t", LIVE))
        held.cancel()


def row_max_concurrent_executes_per_subject(tmp: Path) -> None:
    with _scene(tmp, max_concurrent_executes=8, max_concurrent_executes_per_subject=1) as scene:
        held = _held_execute(scene)
        scene.refuses(
            RE, "limits.max_concurrent_executes_per_subject", lambda: scene.run("t", LIVE)
        )
        held.cancel()


def row_max_concurrent_projects(tmp: Path) -> None:
    # Items past the inline size are projected in a worker thread, so calls overlap.
    script = "true; " * 3_000
    item = function_item("shell_command", {"command": script, "login": False})
    with _scene(tmp, max_concurrent_projects=1, admission_wait_ms=0) as scene:

        def project(_: int) -> grpc.RpcError | None:
            try:
                scene.router.stub.Project(
                    router_pb2.ProjectRequest(thread_id="t", turn=turn(), item=item), timeout=30
                )
            except grpc.RpcError as exc:
                return exc
            return None

        with ThreadPoolExecutor(16) as pool:
            errors = [e for e in pool.map(project, range(32)) if e is not None]
        assert errors, "32 overlapping Projects all got the single slot"
        for err in errors:
            refused(err, RE, "limits.max_concurrent_projects")


def row_max_item_bytes(tmp: Path) -> None:
    with _scene(tmp, max_item_bytes=1_000) as scene:
        scene.refuses(INVALID, "limits.max_item_bytes", lambda: scene.run("t", exec_item("x" * 2_000)))


def row_max_message_bytes(tmp: Path) -> None:
    # gRPC itself refuses an oversized request before any handler: RESOURCE_EXHAUSTED
    # without a shellgate ErrorInfo (documented in docs/limits.md).
    with _scene(tmp, max_message_bytes=64 * 1024) as scene:
        with pytest.raises(grpc.RpcError) as err:
            scene.run("t", exec_item("x" * 100_000))
        assert err.value.code() == RE
        assert "larger than max" in (err.value.details() or "")


def row_max_send_message_bytes(tmp: Path) -> None:
    # A projection repeats the script several times; a reply past the send limit is
    # refused by gRPC (RESOURCE_EXHAUSTED, no ErrorInfo).
    with _scene(tmp, max_send_message_bytes=16 * 1024) as scene:
        item = function_item("shell_command", {"command": "echo " + "y" * 6_000})
        with pytest.raises(grpc.RpcError) as err:
            scene.router.stub.Project(
                router_pb2.ProjectRequest(thread_id="t", turn=turn(), item=item), timeout=10
            )
        assert err.value.code() == RE, err.value


def row_max_environments_per_turn(tmp: Path) -> None:
    with _scene(tmp, max_environments_per_turn=1) as scene:
        two = turn()
        two.environments.add().CopyFrom(two.environments[0])
        scene.refuses(
            INVALID, "limits.max_environments_per_turn", lambda: scene.run("t", LIVE, t=two)
        )


def row_max_threads(tmp: Path) -> None:
    with _scene(tmp, max_threads=2) as scene:
        # Idle threads are evicted, least recently used first, to make room.
        for tid in ("idle1", "idle2", "live1"):
            assert completed(scene.run(tid, exec_item("true"))).exit_code == 0
        with pytest.raises(grpc.RpcError) as gone:
            scene.sessions("idle1")
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND
        assert scene.sessions("idle2") == []
        # Threads holding a session are not idle: with two of them, a third is refused.
        assert completed(scene.run("live1", LIVE)).HasField("session_id")
        assert completed(scene.run("live2", LIVE)).HasField("session_id")
        scene.refuses(RE, "limits.max_threads", lambda: scene.run("t3", exec_item("true")))


def row_max_unified_sessions(tmp: Path) -> None:
    with _scene(tmp, max_unified_sessions=2) as scene:
        first = completed(scene.run("a", LIVE)).session_id
        assert completed(scene.run("b", LIVE)).HasField("session_id")
        scene.refuses(RE, "limits.max_unified_sessions", lambda: scene.run("c", LIVE))
        # A freed session makes room again.
        scene.router.stub.TerminateSession(
            router_pb2.TerminateSessionRequest(thread_id="a", session_id=first), timeout=10
        )
        assert completed(scene.run("c", LIVE)).HasField("session_id")


def row_max_unified_sessions_per_thread(tmp: Path) -> None:
    # Codex's behaviour, not a refusal: storing one more prunes the least recently used.
    with _scene(tmp, max_unified_sessions_per_thread=2) as scene:
        live = [exec_item("sleep 30", call_id=f"live{i}", yield_time_ms=250) for i in range(3)]
        ids = [completed(scene.run("t", item)).session_id for item in live]
        assert len(set(ids)) == 3
        eventually(lambda: scene.sessions("t") == sorted(ids[1:]), "the oldest session pruned", 10)


def row_max_pending_approvals_per_thread(tmp: Path) -> None:
    with _scene(tmp, max_pending_approvals_per_thread=1) as scene:
        scene.park("t")
        scene.refuses(
            RE, "limits.max_pending_approvals_per_thread", lambda: scene.park("t", "c2")
        )
        assert scene.park("other")  # another thread has its own allowance


def row_max_pending_approvals(tmp: Path) -> None:
    with _scene(tmp, max_pending_approvals=2) as scene:
        first = scene.park("a")
        scene.park("b")
        scene.refuses(RE, "limits.max_pending_approvals", lambda: scene.park("c"))
        # Answering one makes room.
        resume = router_pb2.ExecuteRequest(
            thread_id="a",
            turn=ask_turn(),
            resume=router_pb2.ResumeCall(
                approval_id=first, decision=router_pb2.APPROVAL_DECISION_DENIED
            ),
        )
        assert completed(execute(scene.router.stub, resume))
        assert scene.park("c")


def row_approval_ttl_ms(tmp: Path) -> None:
    # An expired parked call is gone (NOT_FOUND) and no longer counts against the limits.
    with _scene(tmp, approval_ttl_ms=300, max_pending_approvals_per_thread=1) as scene:
        approval = scene.park("t")
        time.sleep(0.4)
        assert scene.park("t", "c2")
        resume = router_pb2.ExecuteRequest(
            thread_id="t",
            turn=ask_turn(),
            resume=router_pb2.ResumeCall(
                approval_id=approval, decision=router_pb2.APPROVAL_DECISION_APPROVED
            ),
        )
        with pytest.raises(grpc.RpcError) as err:
            execute(scene.router.stub, resume)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def row_thread_idle_ttl_ms(tmp: Path) -> None:
    with _scene(tmp, thread_idle_ttl_ms=200, sweep_interval_ms=50) as scene:
        assert completed(scene.run("t", exec_item("true"))).exit_code == 0

        def swept() -> bool:
            try:
                scene.sessions("t")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.NOT_FOUND
                return True
            return False

        # Every look at the thread uses it (resets its idle time): look less often than the TTL.
        eventually(swept, "the idle thread swept", 8, 0.4)


ROUTER_ROWS: dict[str, Callable[[Path], None]] = {
    name.removeprefix("row_"): fn for name, fn in dict(globals()).items() if name.startswith("row_")
}


# --- exec-server rows -------------------------------------------------------------------

ExecRow = Callable[[Any, Path], Awaitable[None]]


async def _refuses(code: grpc.StatusCode, key: str, call: Awaitable[object]) -> None:
    with pytest.raises(grpc.RpcError) as err:
        await call
    refused(err.value, code, key)


async def _started(stub: Any, argv: list[str], **fields: Any) -> str:
    """Start a detached process; its id."""
    stream = stub.Start(start_request(argv, detach=True, **fields))
    async for message in stream:
        if message.event.WhichOneof("event") == "started":
            stream.cancel()
            return str(message.event.started.process_id)
    raise AssertionError("no started event")


async def _start_fails(stub: Any, argv: list[str], **fields: Any) -> None:
    async for _ in stub.Start(start_request(argv, **fields)):
        pass


async def x_max_processes_per_caller(stub: Any, tmp: Path) -> None:
    await _started(stub, ["sleep", "20"])
    await _refuses(RE, "max_processes_per_caller", _started(stub, ["sleep", "20"]))


async def x_max_processes_total(stub: Any, tmp: Path) -> None:
    await _started(stub, ["sleep", "20"])
    await _refuses(RE, "max_processes_total", _started(stub, ["sleep", "20"]))


async def x_max_argv_items(stub: Any, tmp: Path) -> None:
    await _refuses(INVALID, "max_argv_items", _start_fails(stub, ["echo", "a", "b"]))


async def x_max_argv_bytes(stub: Any, tmp: Path) -> None:
    await _refuses(INVALID, "max_argv_bytes", _start_fails(stub, ["echo", "x" * 64]))


async def x_max_env_entries(stub: Any, tmp: Path) -> None:
    env = {"A": "1", "B": "2"}
    await _refuses(INVALID, "max_env_entries", _start_fails(stub, ["true"], env=env))


async def x_max_env_bytes(stub: Any, tmp: Path) -> None:
    env = {"A": "x" * 64}
    await _refuses(INVALID, "max_env_bytes", _start_fails(stub, ["true"], env=env))


async def x_max_write_bytes(stub: Any, tmp: Path) -> None:
    pid = await _started(stub, ["cat"], stdin_open=True)
    write = stub.Write(pb.WriteRequest(process_id=pid, data=b"x" * 64))
    await _refuses(INVALID, "max_write_bytes", write)


async def x_max_read_wait_ms(stub: Any, tmp: Path) -> None:
    # A clamp, not a refusal: a longer wait_ms returns after max_read_wait_ms.
    pid = await _started(stub, ["sleep", "20"])
    begun = time.monotonic()
    await stub.Read(pb.ReadRequest(process_id=pid, wait_ms=20_000), timeout=10)
    assert time.monotonic() - begun < 5


async def x_max_read_bytes(stub: Any, tmp: Path) -> None:
    # A clamp: a Read returns at most max_read_bytes past its first chunk.
    script = "printf aaaa; sleep 0.1; printf bbbb; sleep 0.1; printf cccc"
    pid = await _started(stub, ["sh", "-c", script])

    async def exited() -> bool:
        reply = await stub.Read(pb.ReadRequest(process_id=pid, wait_ms=200), timeout=10)
        return reply.exited

    with contextlib.suppress(AssertionError):  # as before: the reads below say the rest
        await eventually_async(exited, "the script's exit", 10, 0)  # each Read waits 200 ms
    reply = await stub.Read(pb.ReadRequest(process_id=pid), timeout=10)
    data = b"".join(c.data for c in reply.chunks)
    assert data == b"aaaa", data
    everything = await stub.Read(pb.ReadRequest(process_id=pid, after_seq=reply.next_seq))
    assert everything.chunks


async def x_max_file_bytes(stub: Any, tmp: Path) -> None:
    path = tmp / "big"
    path.write_bytes(b"x" * 64)
    await _refuses(RE, "max_file_bytes", stub.ReadFile(pb.ReadFileRequest(path=str(path))))
    write = stub.WriteFile(pb.WriteFileRequest(path=str(tmp / "new"), data=b"x" * 64))
    await _refuses(INVALID, "max_file_bytes", write)


async def x_max_message_bytes(stub: Any, tmp: Path) -> None:
    # gRPC refuses the oversized request itself (RESOURCE_EXHAUSTED, no ErrorInfo).
    with pytest.raises(grpc.RpcError) as err:
        await stub.WriteFile(pb.WriteFileRequest(path=str(tmp / "f"), data=b"x" * 100_000))
    assert err.value.code() == RE


async def x_max_owner_chars(stub: Any, tmp: Path) -> None:
    await _refuses(INVALID, "max_owner_chars", _start_fails(stub, ["true"], owner="o" * 64))


async def x_max_pty_rows(stub: Any, tmp: Path) -> None:
    start = _start_fails(stub, ["true"], tty=True, rows=50, cols=10)
    await _refuses(INVALID, "max_pty_rows", start)


async def x_max_pty_cols(stub: Any, tmp: Path) -> None:
    start = _start_fails(stub, ["true"], tty=True, rows=10, cols=50)
    await _refuses(INVALID, "max_pty_cols", start)


EXEC_ROWS: dict[str, ExecRow] = {
    name.removeprefix("x_"): fn for name, fn in dict(globals()).items() if name.startswith("x_")
}
# The small values each exec-server row runs with (every other key keeps its default).
EXEC_VALUES: dict[str, int] = {
    "max_processes_per_caller": 1,
    "max_processes_total": 1,
    "max_argv_items": 2,
    "max_env_entries": 1,
    "max_read_bytes": 4,
    "max_read_wait_ms": 100,
    "max_message_bytes": 64 * 1024,
}
SMALL = 8


def exec_limit_keys() -> set[str]:
    """Every bound of the exec-server's configuration (its `max_*` keys)."""
    return {f.name for f in dataclasses.fields(ServerConfig) if f.name.startswith("max_")}


# --- the tests --------------------------------------------------------------------------


def test_every_limit_key_has_a_row() -> None:
    router_keys = {f.name for f in dataclasses.fields(Limits)}
    assert router_keys == set(ROUTER_ROWS) | set(ROUTER_TIMINGS)
    assert not set(ROUTER_ROWS) & set(ROUTER_TIMINGS)
    assert exec_limit_keys() == set(EXEC_ROWS)


@pytest.mark.parametrize("key", sorted(ROUTER_ROWS))
def test_router_limit_is_enforced(key: str, tmp_path: Path) -> None:
    ROUTER_ROWS[key](tmp_path)


@pytest.mark.parametrize("key", sorted(EXEC_ROWS))
def test_execserver_limit_is_enforced(key: str, tmp_path: Path) -> None:
    value = EXEC_VALUES.get(key, SMALL)
    overrides: dict[str, Any] = {key: value, "root": str(tmp_path)}
    if key == "max_processes_total":
        overrides["max_processes_per_caller"] = 4

    async def main() -> None:
        async with (
            in_process_daemon(daemon_config(**overrides)) as running,
            exec_stub(f"127.0.0.1:{running.port}") as stub,
        ):
            await EXEC_ROWS[key](stub, tmp_path)

    asyncio.run(main())


def test_one_subject_cannot_starve_another(tmp_path: Path) -> None:
    """Alone, a subject may use every Execute slot; once another subject asks, the first
    cannot refill past its share, so the slot it frees goes to the newcomer."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    alice = [("authorization", f"Bearer {ALICE}")]
    bob = [("authorization", f"Bearer {BOB}")]
    with _scene(tmp_path, max_concurrent_executes=2, config={"token_file": str(tokens)}) as scene:
        held = [_held_execute(scene, alice), _held_execute(scene, alice)]
        with pytest.raises(grpc.RpcError) as err:
            _held_execute(scene, bob)
        refused(err.value, RE, "limits.max_concurrent_executes")
        held.pop().cancel()
        time.sleep(0.2)  # the cancelled call releases its slot
        with pytest.raises(grpc.RpcError) as err:
            _held_execute(scene, alice)
        refused(err.value, RE, "limits.max_concurrent_executes_per_subject")
        held.append(_held_execute(scene, bob))
        for stream in held:
            stream.cancel()


def test_a_storm_past_the_execute_limit_ends_in_named_refusals(tmp_path: Path) -> None:
    """Every call of a storm either runs or is refused with RESOURCE_EXHAUSTED naming the
    limit: none ends CANCELLED or without a reason."""
    with _scene(tmp_path, max_concurrent_executes=4) as scene:

        def call(i: int) -> grpc.RpcError | None:
            try:
                scene.run(f"s{i % 8}", exec_item("sleep 0.2", f"c{i}"))
            except grpc.RpcError as exc:
                return exc
            return None

        with ThreadPoolExecutor(32) as pool:
            outcomes = list(pool.map(call, range(120)))
        errors = [e for e in outcomes if e is not None]
        assert errors and len(errors) < len(outcomes)
        for err in errors:
            refused(err, RE, "limits.max_concurrent_executes")


# --- connections.max_calls_per_peer (both daemons; not a [limits]/max_* key) -------------


def _health_serving(channel: Any) -> bool:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def test_router_refuses_calls_past_max_calls_per_peer(tmp_path: Path) -> None:
    config = {"connections": ConnectionLimits(max_calls_per_peer=2)}
    with _scene(tmp_path, max_concurrent_executes=8, config=config) as scene:
        held = [_held_execute(scene) for _ in range(2)]
        listing = router_pb2.ListToolsRequest(thread_id="t")
        key = "connections.max_calls_per_peer"
        scene.refuses(RE, key, lambda: scene.router.stub.ListTools(listing, timeout=10))
        # From another connection of the same peer too; Health Check is never counted.
        with grpc.insecure_channel(f"127.0.0.1:{scene.router.port}") as other:
            stub = router_pb2_grpc.ToolRouterServiceStub(other)
            scene.refuses(RE, key, lambda: stub.ListTools(listing, timeout=10))
            assert _health_serving(other)
        for stream in held:
            stream.cancel()

        def served() -> bool:
            try:
                assert scene.router.stub.ListTools(listing, timeout=10).tools
            except grpc.RpcError as err:
                refused(err, RE, key)
                return False
            return True

        # The cancelled calls end on the server shortly after.
        eventually(served, "the peer's count to go down", 10)


def test_execserver_refuses_calls_past_max_calls_per_peer(tmp_path: Path) -> None:
    config = daemon_config(connections=ConnectionLimits(max_calls_per_peer=2))

    async def main() -> None:
        async with (
            in_process_daemon(config) as running,
            exec_stub(f"127.0.0.1:{running.port}") as stub,
        ):
            streams = [stub.Start(start_request(["sleep", "20"])) for _ in range(2)]
            for stream in streams:  # both calls are in flight once `started` arrives
                assert (await stream.read()).event.WhichOneof("event") == "started"
            key = "connections.max_calls_per_peer"
            await _refuses(RE, key, stub.GetInfo(pb.GetInfoRequest(), timeout=10))
            for stream in streams:
                stream.cancel()

            async def served() -> bool:
                try:
                    await stub.GetInfo(pb.GetInfoRequest(), timeout=10)
                except grpc.RpcError as err:
                    refused(err, RE, key)
                    return False
                return True

            await eventually_async(served, "the peer's count to go down", 10)

    asyncio.run(main())
