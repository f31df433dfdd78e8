"""Router bearer tokens and per-subject environment allow-lists: UNAUTHENTICATED /
PERMISSION_DENIED on every RPC, nothing spawned when refused, tokens never logged, and a
non-loopback listen address refused without TLS unless insecure."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.router_harness import (
    Router,
    completed,
    function_item,
    router_config,
    router_subprocess,
    running_router,
    turn,
)

ALICE = "alice-7c1d9e0b55aa"
BOB = "bob-0f4e22d1c9bb"
WRONG = "mallory-1234567890"


def _tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"# subject token\nalice {ALICE}\nbob {BOB}\n")
    return path


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    config = router_config(
        token_file=str(_tokens(tmp_path)),
        client_environments=(("bob", ("elsewhere",)),),
        local_cwd=str(tmp_path),
    )
    with running_router(config) as r:
        yield r


def _auth(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


RPCS: dict[str, Callable[[router_pb2_grpc.ToolRouterServiceStub, Any], Any]] = {
    "ListTools": lambda s, md: s.ListTools(
        router_pb2.ListToolsRequest(thread_id="t"), timeout=10, metadata=md
    ),
    "Project": lambda s, md: s.Project(
        router_pb2.ProjectRequest(thread_id="t", turn=turn(), item=function_item("x", {})),
        timeout=10,
        metadata=md,
    ),
    "Execute": lambda s, md: list(
        s.Execute(
            router_pb2.ExecuteRequest(
                thread_id="t", turn=turn(), item=function_item("exec_command", {"cmd": "true"})
            ),
            timeout=10,
            metadata=md,
        )
    ),
    "ListEnvironments": lambda s, md: s.ListEnvironments(
        router_pb2.ListEnvironmentsRequest(), timeout=10, metadata=md
    ),
    "ListSessions": lambda s, md: s.ListSessions(
        router_pb2.ListSessionsRequest(thread_id="t"), timeout=10, metadata=md
    ),
    "TerminateSession": lambda s, md: s.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id="t", session_id=1), timeout=10, metadata=md
    ),
    "Interrupt": lambda s, md: s.Interrupt(
        router_pb2.InterruptRequest(thread_id="t", call_id="c"), timeout=10, metadata=md
    ),
    "EndThread": lambda s, md: s.EndThread(
        router_pb2.EndThreadRequest(thread_id="t"), timeout=10, metadata=md
    ),
    "GetServerInfo": lambda s, md: s.GetServerInfo(
        router_pb2.GetServerInfoRequest(), timeout=10, metadata=md
    ),
}


@pytest.mark.parametrize("rpc", sorted(RPCS))
@pytest.mark.parametrize(
    "metadata",
    [[], _auth(WRONG), [("authorization", ALICE)], [("authorization", "Basic " + ALICE)]],
    ids=["none", "wrong", "no-scheme", "basic"],
)
def test_every_rpc_needs_a_valid_token(
    router: Router, rpc: str, metadata: list[tuple[str, str]]
) -> None:
    with pytest.raises(grpc.RpcError) as err:
        RPCS[rpc](router.stub, metadata)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert ALICE not in (err.value.details() or "")


def test_health_stays_open_for_probes(router: Router) -> None:
    reply = health_pb2_grpc.HealthStub(router.channel).Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_allow_list_refuses_execute_before_anything_runs(router: Router, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    request = router_pb2.ExecuteRequest(
        thread_id="t",
        turn=turn(),
        item=function_item("exec_command", {"cmd": f"touch {marker}", "login": False}),
    )
    with pytest.raises(grpc.RpcError) as err:
        list(router.stub.Execute(request, timeout=10, metadata=_auth(BOB)))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert not marker.exists()
    # Bob does not even see the environment he may not use.
    envs = router.stub.ListEnvironments(
        router_pb2.ListEnvironmentsRequest(), timeout=10, metadata=_auth(BOB)
    )
    assert [e.environment_id for e in envs.environments] == []
    # Alice is not listed: she may use every environment.
    done = completed(list(router.stub.Execute(request, timeout=30, metadata=_auth(ALICE))))
    assert done.exit_code == 0 and marker.exists()


def test_tokens_are_never_logged_in_process(
    router: Router, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        for token in (ALICE, BOB, WRONG):
            for rpc in RPCS.values():
                with contextlib.suppress(grpc.RpcError):
                    rpc(router.stub, _auth(token))
    assert caplog.records, "nothing was logged at DEBUG: the check would be vacuous"
    for token in (ALICE, BOB, WRONG):
        assert token not in caplog.text


def test_tokens_are_never_logged_by_the_daemon(tmp_path: Path) -> None:
    config = tmp_path / "router.toml"
    config.write_text(f'token_file = "{_tokens(tmp_path)}"\nlocal_cwd = "{tmp_path}"\n')
    with router_subprocess(["--config", str(config), "--log-level", "DEBUG"]) as (proc, port):
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            for token in (ALICE, WRONG):
                for rpc in RPCS.values():
                    with contextlib.suppress(grpc.RpcError):
                        rpc(stub, _auth(token))
        proc.terminate()
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        log = proc.stderr.read().decode()
    assert "DEBUG" in log or "INFO" in log, log[-500:]
    assert ALICE not in log and WRONG not in log and BOB not in log


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--print-port", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_non_loopback_listen_refuses_to_start_without_tls() -> None:
    result = _serve("--listen", "0.0.0.0:0")
    assert result.returncode == 2
    assert "not loopback" in result.stderr and result.stdout == ""


def test_non_loopback_listen_starts_with_explicit_insecure() -> None:
    with router_subprocess(["--listen", "0.0.0.0:0", "--insecure"]) as (proc, port):
        assert port > 0 and proc.poll() is None
