"""Two routers sharing thread state through a real redis-server, one real exec-server daemon.

A remote unified-exec session started through router A is polled, written, listed and
terminated through router B (re-attached by daemon process id and consumed seq); an
"approved for session" decision made on A is honoured on B; EndThread on B ends A's
sessions; keys expire with the idle TTL; a Redis outage leaves local calls without shared
state running and answers UNAVAILABLE to the rest (spec 06 §2, §3; docs/scaling.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig
from shellgate.router.runtime.threads.registry import owned_thread_key
from shellgate.router.service.config import Limits, RouterConfig
from shellgate.v1 import router_pb2

from tests.execserver_harness import Daemon, daemon_subprocess
from tests.integration.shared_support import REDIS_SERVER, redis_server, shared_router
from tests.router_harness import Router, completed, function_item, turn

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

IDLE_TTL_MS = 4_000
THREAD = "shared-1"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A loopback redis-server for the module."""
    with redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path]]:
    """One daemon with a token: both routers authenticate as the same subject."""
    root = tmp_path_factory.mktemp("daemon")
    tokens = root / "tokens"
    tokens.write_text("router s3cret-token\n")
    with daemon_subprocess(["--token-file", str(tokens), "--root", str(root)]) as d:
        yield d, tokens


@pytest.fixture(scope="module")
def routers(
    redis_url: str, daemon: tuple[Daemon, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Router, Router]]:
    """Routers A and B, same config (a `prompt` rule for `touch`), state in Redis."""
    d, tokens = daemon
    rules = tmp_path_factory.mktemp("rules")
    (rules / "base.rules").write_text('prefix_rule(pattern=["touch"], decision="prompt")\n')
    config = RouterConfig(
        local_token=False,
        listen="127.0.0.1:0",
        environments=(
            RemoteConfig(
                "box",
                d.target,
                dial=DialSettings(
                    token_file=str(tokens), connect_timeout_ms=3_000, call_timeout_ms=5_000
                ),
            ),
        ),
        rules_dirs=(str(rules),),
        limits=replace(Limits(), thread_idle_ttl_ms=IDLE_TTL_MS, shutdown_grace_ms=1_000),
    )
    with shared_router(config, redis_url) as a, shared_router(config, redis_url) as b:
        yield a, b


def run(
    router: Router,
    name: str,
    args: Mapping[str, object],
    call_id: str,
    env: str = "box",
    thread: str = THREAD,
) -> list[router_pb2.ExecuteResponse]:
    """All events of one Execute (login shells off: fast and profile-free)."""
    if name != "write_stdin":
        args = {"login": False, **args}
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(environment_id=env),
        item=function_item(name, dict(args), call_id),
    )
    return list(router.stub.Execute(request, timeout=30))


def resume(
    router: Router, thread: str, approval_id: str, decision: Any
) -> list[router_pb2.ExecuteResponse]:
    """All events of a resumed call."""
    request = router_pb2.ExecuteRequest(
        thread_id=thread, resume=router_pb2.ResumeCall(approval_id=approval_id, decision=decision)
    )
    return list(router.stub.Execute(request, timeout=30))


def body(events: list[router_pb2.ExecuteResponse]) -> str:
    """The model text after `Output:`."""
    return completed(events).output_text.split("Output:\n", 1)[1]


def test_remote_session_moves_between_routers(
    routers: tuple[Router, Router],
) -> None:
    a, b = routers
    started = completed(run(a, "exec_command",
                            {"cmd": "cat", "tty": True, "yield_time_ms": 300}, "c1"))  # fmt: skip
    sid = started.session_id
    assert started.HasField("session_id") and sid >= 1000
    # B writes to A's session and sees cat's echo and output.
    polled = run(b, "write_stdin", {"session_id": sid, "chars": "ping\n",
                                    "yield_time_ms": 1000}, "c2")  # fmt: skip
    assert body(polled) == "ping\r\nping\r\n"
    assert completed(polled).session_id == sid
    # A polls next: nothing is returned twice (the consumed seq is shared).
    again = run(a, "write_stdin", {"session_id": sid, "chars": "pong\n",
                                   "yield_time_ms": 800}, "c3")  # fmt: skip
    assert body(again) == "pong\r\npong\r\n"
    listed = b.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id=THREAD), timeout=10)
    assert [(s.session_id, s.environment_id, s.running) for s in listed.sessions] == [
        (sid, "box", True)
    ]
    reply = b.stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=sid), timeout=10
    )
    assert reply.was_running
    gone = completed(run(a, "write_stdin", {"session_id": sid}, "c5"))
    assert gone.output_text == f"write_stdin failed: Unknown process id {sid}"
    with pytest.raises(grpc.RpcError) as err:
        b.stub.TerminateSession(
            router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=sid), timeout=10
        )
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_local_sessions_stay_with_their_router(
    routers: tuple[Router, Router],
) -> None:
    a, b = routers
    started = completed(run(a, "exec_command", {"cmd": "sleep 20", "yield_time_ms": 250},
                            "l1", env="local"))  # fmt: skip
    sid = started.session_id
    other = completed(run(b, "write_stdin", {"session_id": sid}, "l2"))
    assert other.output_text == f"write_stdin failed: Unknown process id {sid}"
    a.stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=THREAD, session_id=sid), timeout=10
    )


def test_session_approval_is_honoured_on_the_other_router(
    routers: tuple[Router, Router], daemon: tuple[Daemon, Path]
) -> None:
    a, b = routers
    cmd = {"cmd": "touch approved.txt"}
    first = run(a, "exec_command", cmd, "a1")
    assert first[-1].WhichOneof("event") == "approval_required"
    approval_id = first[-1].approval_required.approval_id
    # The parked call is stored as data: B resumes what A parked, and A no longer can.
    resumed = resume(b, THREAD, approval_id, router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION)
    assert completed(resumed).exit_code == 0
    with pytest.raises(grpc.RpcError) as err:
        resume(a, THREAD, approval_id, router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # Same approval key on B: no prompt.
    second = run(b, "exec_command", cmd, "b1")
    assert completed(second).exit_code == 0
    assert not any(e.WhichOneof("event") == "approval_required" for e in second)
    # Another thread does not inherit it.
    other = run(b, "exec_command", cmd, "b2", thread="shared-other")
    assert other[-1].WhichOneof("event") == "approval_required"


def test_end_thread_on_b_ends_sessions_started_on_a(
    routers: tuple[Router, Router], redis_url: str
) -> None:
    a, b = routers
    tid = "shared-end"
    sid = completed(run(a, "exec_command", {"cmd": "sleep 30", "yield_time_ms": 250}, "e1",
                        thread=tid)).session_id  # fmt: skip
    pending = run(a, "exec_command", {"cmd": "touch x"}, "e2", thread=tid)
    assert pending[-1].WhichOneof("event") == "approval_required"
    ended = b.stub.EndThread(router_pb2.EndThreadRequest(thread_id=tid), timeout=10)
    assert (ended.terminated_sessions, ended.dropped_pending_approvals) == (1, 1)
    client = redis.Redis.from_url(redis_url)
    assert client.keys(f"shellgate:{{{tid}}}:*") == []
    gone = completed(run(a, "write_stdin", {"session_id": sid}, "e3", thread=tid))
    assert gone.output_text == f"write_stdin failed: Unknown process id {sid}"
    # A's parked call was dropped with the thread.
    with pytest.raises(grpc.RpcError) as err:
        resume(
            a, tid, pending[-1].approval_required.approval_id, router_pb2.APPROVAL_DECISION_APPROVED
        )
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_keys_expire_with_the_idle_ttl(routers: tuple[Router, Router], redis_url: str) -> None:
    a, b = routers
    tid = "shared-expiry"
    cmd = {"cmd": "touch expiry.txt"}
    first = run(a, "exec_command", cmd, "x1", thread=tid)
    resume(
        a,
        tid,
        first[-1].approval_required.approval_id,
        router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
    )
    client = redis.Redis.from_url(redis_url)
    # Threads are stored under the caller's namespace (the open router's subject `local`).
    key = owned_thread_key("local", tid)
    pattern = f"shellgate:{{{key}}}:*"
    keys = {k.decode() if isinstance(k, bytes) else k for k in client.keys(pattern)}
    assert f"shellgate:{{{key}}}:approved" in keys and f"shellgate:{{{key}}}:meta" in keys
    assert all(0 < client.pttl(k) <= IDLE_TTL_MS for k in keys)
    time.sleep(IDLE_TTL_MS / 1000 + 0.5)
    assert client.keys(pattern) == []
    # The approval went with the thread: B asks again.
    again = run(b, "exec_command", cmd, "x2", thread=tid)
    assert again[-1].WhichOneof("event") == "approval_required"


def test_redis_outage_is_degraded_not_fatal(tmp_path: Path) -> None:
    """Last: its own redis-server, stopped under a router. Local calls needing no shared
    state keep running; what needs it (an approval lookup, an unknown thread) is UNAVAILABLE."""
    (tmp_path / "base.rules").write_text('prefix_rule(pattern=["touch"], decision="prompt")\n')
    with redis_server() as url:
        config = RouterConfig(
            listen="127.0.0.1:0",
            local_token=False,
            rules_dirs=(str(tmp_path),),
            local_cwd=str(tmp_path),
        )
        with shared_router(config, url) as r:
            ok = run(r, "exec_command", {"cmd": "true"}, "o1", env="local", thread="o")
            assert completed(ok).exit_code == 0
            redis.Redis.from_url(url).shutdown(nosave=True)
            for call_id, thread in (("o2", "o"), ("o3", "new-during-outage")):
                echoed = run(r, "exec_command", {"cmd": "echo still"}, call_id, env="local",
                             thread=thread)  # fmt: skip
                assert body(echoed) == "still\n"
            # The approval cache cannot be read: the model is told, nothing runs.
            refused = completed(
                run(r, "exec_command", {"cmd": "touch f"}, "o4", env="local", thread="o")
            )
            assert refused.output_text.startswith(
                "execution error: shared thread state unavailable (approval lookup)"
            )
            assert not (tmp_path / "f").exists()
            with pytest.raises(grpc.RpcError) as err:
                r.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id="unknown"), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
