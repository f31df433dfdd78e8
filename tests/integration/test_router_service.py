"""The router end to end through real gRPC on loopback (in-process server, real processes)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.router.decode.tools import ToolsConfig, list_tools
from shellgate.router.service.config import Limits, RouterConfig
from shellgate.v1 import common_pb2, router_pb2

from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    router_subprocess,
    running_router,
    turn,
)
from tests.waiting import eventually

SHELL_COMMAND = common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "base.rules").write_text(
        'prefix_rule(pattern=["python3"], decision="allow")\n'
        'prefix_rule(pattern=["rm"], decision="forbidden", justification="no deleting")\n'
        'prefix_rule(pattern=["git", "push"], decision="prompt")\n'
    )
    return d


@pytest.fixture
def router(rules_dir: Path, tmp_path: Path) -> Iterator[Router]:
    config = router_config(rules_dirs=(str(rules_dir),), local_cwd=str(tmp_path))
    with running_router(config) as r:
        yield r


def test_list_tools_is_the_pure_tool_list(router: Router) -> None:
    tools = router.stub.ListTools(router_pb2.ListToolsRequest(thread_id="t"), timeout=10).tools
    assert [json.loads(t.json) for t in tools] == list_tools(ToolsConfig())
    assert [t.name for t in tools] == ["exec_command", "write_stdin", "apply_patch"]


def test_project_seed_heredoc_experiment(router: Router) -> None:
    script = "python3 <<'PY'\nprint('hello')\nPY"
    item = function_item("shell_command", {"command": script})
    request = router_pb2.ProjectRequest(
        thread_id="t",
        turn=turn(
            shell_tool=SHELL_COMMAND,
            profile=common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY,
        ),
        item=item,
    )
    projection = router.stub.Project(request, timeout=10).projection
    command = projection.shell.elements[0].command
    assert command.handler_argv[1:] == ["-lc", script]
    assert [list(c.words) for c in command.policy.commands] == [["python3"]]
    assert command.policy.used_complex_parsing is True
    requirement = command.requirement
    assert requirement.WhichOneof("requirement") == "skip"
    assert requirement.skip.bypass_sandbox is True
    assert not requirement.skip.HasField("proposed_amendment")
    assert re.fullmatch(r"[0-9a-f]{64}", command.approval.digest)


def test_project_answers_repeat_until_the_rules_or_the_turn_change(router: Router) -> None:
    """Kept Project answers (wire/project_cache.py) are the pipeline's own: the same request
    answers the same bytes, and a rules change or another turn projects again."""
    item = function_item("exec_command", {"cmd": "make deploy"})

    def project(approval: int = common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED) -> bytes:
        request = router_pb2.ProjectRequest(thread_id="t", turn=turn(approval=approval), item=item)
        return router.stub.Project(request, timeout=10).SerializeToString(deterministic=True)

    def requirement(answer: bytes) -> str | None:
        projection = router_pb2.ProjectResponse.FromString(answer).projection
        return projection.shell.elements[0].command.requirement.WhichOneof("requirement")

    first = project()
    assert requirement(first) == "needs_approval"
    assert project() == first
    # Another turn (approval policy never): its own answer, not the kept one.
    assert requirement(project(common_pb2.APPROVAL_POLICY_KIND_NEVER)) != "needs_approval"
    store = router.running.app.policy_store
    assert store is not None
    # An amendment replaces the rules object: the kept answer no longer applies.
    router.call(asyncio.to_thread(store.append_prefix_rule, ["make", "deploy"]))
    assert requirement(project()) == "skip"


def test_project_serde_error_text(router: Router) -> None:
    request = router_pb2.ProjectRequest(
        thread_id="t", turn=turn(), item=function_item("exec_command", '{"cmd": ["ls"]}')
    )
    projection = router.stub.Project(request, timeout=10).projection
    assert projection.tool_error.text == (
        "failed to parse function arguments: invalid type: sequence, expected a string "
        "at line 1 column 8"
    )


def test_execute_exec_command_pairs_call_id(
    router: Router, tmp_path: Path, any_execute_mode: str
) -> None:
    request = router_pb2.ExecuteRequest(
        thread_id="t1",
        turn=turn(),
        item=function_item("exec_command", {"cmd": "echo hello", "login": False}, "call-7"),
    )
    events = execute(router.stub, request)
    assert events[0].WhichOneof("event") == "projection"
    done = completed(events)
    item = json.loads(done.output_item_json)
    assert item["type"] == "function_call_output" and item["call_id"] == "call-7"
    assert item["output"] == done.output_text
    assert "Process exited with code 0\n" in done.output_text
    assert done.output_text.endswith("Output:\nhello\n")
    assert done.exit_code == 0
    assert done.termination == router_pb2.TERMINATION_REASON_EXITED
    output = b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")
    # ExecuteOnce leaves the streamed output out: `completed` holds it.
    assert output == (b"" if any_execute_mode == "once" else b"hello\n")
    assert [e.WhichOneof("event") for e in events if e.WhichOneof("event") != "output"] == [
        "projection", "started", "completed"
    ]


def test_the_stop_waits_for_answered_calls_bookkeeping() -> None:
    # ExecuteOnce answers before its call's generator finished; the router owns that tail
    # (RouterApp.call_tails), so its stop leaves no task behind.
    with running_router() as router:
        once = router_pb2.ExecuteOnceRequest(request=router_pb2.ExecuteRequest(
            thread_id="tails", turn=turn(),
            item=function_item("exec_command", {"cmd": "echo tail", "login": False}, "c1"),
        ))  # fmt: skip
        reply = router.stub.ExecuteOnce(once, timeout=30)
        assert reply.ByteSize() > 0
        app = router.running.app
        finished: list[bool] = []

        async def slow_tail() -> None:
            await asyncio.sleep(0.5)
            finished.append(True)

        async def spawn() -> None:
            app.call_tails.spawn(slow_tail(), name="test-tail")

        router.call(spawn())
    # The stop waited for the tail (it would be cancelled or left pending otherwise).
    assert finished == [True]
    assert len(app.call_tails) == 0


def test_cancelling_a_coalesced_stream_kills_the_command(router: Router) -> None:
    request = router_pb2.ExecuteRequest(
        thread_id="t-cancel", turn=turn(shell_tool=SHELL_COMMAND),
        item=function_item("shell_command", {"command": "echo up; sleep 30", "login": False}),
        coalesce_ms=50,
    )  # fmt: skip
    stream = router.stub.Execute(request, timeout=60)
    started = None
    for message in stream:
        events = message.batch.events if message.WhichOneof("event") == "batch" else [message]
        started = next((e.started for e in events if e.WhichOneof("event") == "started"), None)
        if started is not None:
            break
    assert started is not None and started.pid
    pid = started.pid
    os.kill(pid, 0)  # running
    stream.cancel()

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    eventually(gone, f"pid {pid} killed after the cancel")


@pytest.mark.usefixtures("any_execute_mode")
def test_shell_command_timeout_kills_group(router: Router) -> None:
    request = router_pb2.ExecuteRequest(
        thread_id="t2",
        turn=turn(shell_tool=SHELL_COMMAND),
        item=function_item(
            "shell_command", {"command": "echo start; sleep 30", "timeout_ms": 1000, "login": False}
        ),
    )
    done = completed(execute(router.stub, request))
    assert done.exit_code == 124
    assert done.termination == router_pb2.TERMINATION_REASON_TIMED_OUT
    assert re.fullmatch(
        r"Exit code: 124\nWall time: [0-9.]+ seconds\nOutput:\n"
        r"command timed out after \d+ milliseconds\nstart\n",
        done.output_text,
    )


@pytest.mark.usefixtures("any_execute_mode")
def test_forbidden_rule_spawns_nothing(router: Router) -> None:
    request = router_pb2.ExecuteRequest(
        thread_id="t3",
        turn=turn(),
        item=function_item("exec_command", {"cmd": "rm -rf /tmp/nothing-here"}),
    )
    events = execute(router.stub, request)
    assert not [e for e in events if e.WhichOneof("event") == "started"]
    done = completed(events)
    assert done.termination == router_pb2.TERMINATION_REASON_FORBIDDEN
    assert "no deleting" in done.output_text


def _approval(events: list[router_pb2.ExecuteResponse]) -> router_pb2.ApprovalRequired:
    assert events[-1].WhichOneof("event") == "approval_required"
    return events[-1].approval_required


@pytest.mark.usefixtures("any_execute_mode")
def test_approval_round_trip_and_session_cache(router: Router, tmp_path: Path) -> None:
    args = {"cmd": "git push origin main 2>/dev/null; echo pushed", "login": False}
    first = router_pb2.ExecuteRequest(
        thread_id="t4", turn=turn(), item=function_item("exec_command", args, "a1")
    )
    approval = _approval(execute(router.stub, first))
    assert approval.call_id == "a1"
    assert router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION in approval.available_decisions
    resumed = execute(
        router.stub,
        router_pb2.ExecuteRequest(
            thread_id="t4",
            resume=router_pb2.ResumeCall(
                approval_id=approval.approval_id,
                decision=router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
            ),
        ),
    )
    done = completed(resumed)
    assert json.loads(done.output_item_json)["call_id"] == "a1"
    assert done.output_text.endswith("pushed\n")
    # Same key again: no prompt this time.
    again = execute(
        router.stub,
        router_pb2.ExecuteRequest(
            thread_id="t4", turn=turn(), item=function_item("exec_command", args, "a2")
        ),
    )
    assert completed(again).output_text.endswith("pushed\n")
    # Another thread does not share the approval.
    other = router_pb2.ExecuteRequest(
        thread_id="t5", turn=turn(), item=function_item("exec_command", args, "a3")
    )
    _approval(execute(router.stub, other))


@pytest.mark.usefixtures("any_execute_mode")
def test_denied_approval_text(router: Router) -> None:
    first = router_pb2.ExecuteRequest(
        thread_id="t6", turn=turn(), item=function_item("exec_command", {"cmd": "git push"}, "d1")
    )
    approval = _approval(execute(router.stub, first))
    resumed = execute(
        router.stub,
        router_pb2.ExecuteRequest(
            thread_id="t6",
            resume=router_pb2.ResumeCall(
                approval_id=approval.approval_id, decision=router_pb2.APPROVAL_DECISION_DENIED
            ),
        ),
    )
    done = completed(resumed)
    assert done.output_text == (
        'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'
    )
    assert done.termination == router_pb2.TERMINATION_REASON_REJECTED


@pytest.mark.usefixtures("any_execute_mode")
def test_unknown_approval_is_not_found(router: Router) -> None:
    request = router_pb2.ExecuteRequest(
        thread_id="t7",
        resume=router_pb2.ResumeCall(
            approval_id="00000000-0000-4000-8000-000000000000",
            decision=router_pb2.APPROVAL_DECISION_APPROVED,
        ),
    )
    with pytest.raises(grpc.RpcError) as err:
        execute(router.stub, request)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_end_thread_is_idempotent(router: Router) -> None:
    never_used = router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="t-none"), timeout=10)
    assert (never_used.terminated_sessions, never_used.dropped_pending_approvals) == (0, 0)
    start = router_pb2.ExecuteRequest(
        thread_id="t-twice",
        turn=turn(),
        item=function_item(
            "exec_command", {"cmd": "cat", "tty": True, "login": False, "yield_time_ms": 250}
        ),
    )
    assert completed(execute(router.stub, start)).HasField("session_id")
    counts = []
    for _ in range(2):
        ended = router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="t-twice"), timeout=10)
        counts.append((ended.terminated_sessions, ended.dropped_pending_approvals))
    assert counts == [(1, 0), (0, 0)]
    with pytest.raises(grpc.RpcError) as err:
        router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="bad id!"), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.usefixtures("any_execute_mode")
def test_pty_session_write_stdin_round_trip(router: Router) -> None:
    start = router_pb2.ExecuteRequest(
        thread_id="t8",
        turn=turn(),
        item=function_item(
            "exec_command", {"cmd": "cat", "tty": True, "login": False, "yield_time_ms": 250}
        ),
    )
    done = completed(execute(router.stub, start))
    assert done.HasField("session_id") and not done.HasField("exit_code")
    assert "Process running with session ID" in done.output_text
    session = done.session_id
    sessions = router.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id="t8")).sessions
    assert [s.session_id for s in sessions] == [session]
    write = router_pb2.ExecuteRequest(
        thread_id="t8",
        turn=turn(),
        item=function_item("write_stdin", {"session_id": session, "chars": "hi\n"}, "w1"),
    )
    assert "hi\r\nhi\r\n" in completed(execute(router.stub, write)).output_text
    eof = router_pb2.ExecuteRequest(
        thread_id="t8",
        turn=turn(),
        item=function_item("write_stdin", {"session_id": session, "chars": "\u0004"}, "w2"),
    )
    assert "Process exited with code 0" in completed(execute(router.stub, eof)).output_text
    gone = router_pb2.ExecuteRequest(
        thread_id="t8",
        turn=turn(),
        item=function_item("write_stdin", {"session_id": session, "chars": ""}, "w3"),
    )
    assert completed(execute(router.stub, gone)).output_text == (
        f"write_stdin failed: Unknown process id {session}"
    )


def test_bad_thread_id_and_unknown_environment(router: Router) -> None:
    with pytest.raises(grpc.RpcError) as err:
        router.stub.Project(
            router_pb2.ProjectRequest(
                thread_id="bad id!", turn=turn(), item=function_item("exec_command", {"cmd": "ls"})
            ),
            timeout=10,
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as err:
        router.stub.Project(
            router_pb2.ProjectRequest(
                thread_id="t",
                turn=turn(environment_id="nowhere"),
                item=function_item("exec_command", {"cmd": "ls"}),
            ),
            timeout=10,
        )
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_and_reflection(router: Router) -> None:
    health = health_pb2_grpc.HealthStub(router.channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service="shellgate.v1.ToolRouterService"))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    stub = reflection_pb2_grpc.ServerReflectionStub(router.channel)
    replies = list(
        stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    )
    names = {s.name for s in replies[0].list_services_response.service}
    assert "shellgate.v1.ToolRouterService" in names


def test_tokens_and_environment_allow_lists(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice s3cret-alice\nbob s3cret-bob\nlocal s3cret-local\n")
    config = router_config(
        token_file=str(tokens),
        # A subject named `local` is not the unauthenticated local caller (issue 13 #7).
        client_environments=(("bob", ("elsewhere",)), ("local", ("elsewhere",))),
        local_cwd=str(tmp_path),
    )
    with running_router(config) as router:
        request = router_pb2.ProjectRequest(
            thread_id="t", turn=turn(), item=function_item("exec_command", {"cmd": "ls"})
        )
        with pytest.raises(grpc.RpcError) as err:
            router.stub.Project(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            router.stub.Project(request, timeout=10, metadata=[("authorization", "Bearer wrong")])
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        ok = router.stub.Project(
            request, timeout=10, metadata=[("authorization", "Bearer s3cret-alice")]
        )
        assert ok.projection.call_id == "c1"
        for token in ("s3cret-bob", "s3cret-local"):
            with pytest.raises(grpc.RpcError) as err:
                router.stub.Project(
                    request, timeout=10, metadata=[("authorization", f"Bearer {token}")]
                )
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED, token


def test_non_loopback_listen_needs_tls_or_insecure() -> None:
    with pytest.raises(ValueError, match="not loopback"):
        replace(RouterConfig(), listen="0.0.0.0:0").validate()
    replace(RouterConfig(), listen="0.0.0.0:0", insecure=True).validate()


def test_admission_limit_answers_resource_exhausted(tmp_path: Path) -> None:
    config = router_config(
        local_cwd=str(tmp_path),
        limits=Limits(max_concurrent_executes=1, admission_wait_ms=20, shutdown_grace_ms=500),
    )
    with running_router(config) as router:
        slow = router.stub.Execute(
            router_pb2.ExecuteRequest(
                thread_id="t",
                turn=turn(),
                item=function_item("exec_command", {"cmd": "sleep 1", "login": False}),
            ),
            timeout=30,
        )
        first = next(slow)  # the projection: the slot is held
        assert first.WhichOneof("event") == "projection"
        with pytest.raises(grpc.RpcError) as err:
            execute(
                router.stub,
                router_pb2.ExecuteRequest(
                    thread_id="t", turn=turn(), item=function_item("exec_command", {"cmd": "true"})
                ),
            )
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        list(slow)


def test_serve_subprocess_sigterm_exits_zero() -> None:
    with router_subprocess() as (proc, port):
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_metrics_endpoint_counts_calls_with_bounded_labels(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = router_config(local_cwd=str(tmp_path), metrics_listen=f"127.0.0.1:{port}")
    with running_router(config) as router:
        secret_cmd = "echo metrics-label-probe"
        execute(
            router.stub,
            router_pb2.ExecuteRequest(
                thread_id="m1",
                turn=turn(),
                item=function_item("exec_command", {"cmd": secret_cmd, "login": False}),
            ),
        )
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode() + b"\r\n\r\n")
            body = b""
            while chunk := conn.recv(65536):
                body += chunk
    text = body.decode()
    assert text.startswith("HTTP/1.1 200 OK")
    assert (
        'shellgate_calls_total{environment="local",outcome="exited",tool="exec_command"} 1.0'
        in text
    )
    assert "metrics-label-probe" not in text and "m1" not in text


def test_thread_and_environment_limits_are_enforced(tmp_path: Path) -> None:
    config = router_config(
        local_cwd=str(tmp_path),
        limits=Limits(max_threads=2, max_environments_per_turn=1, shutdown_grace_ms=500),
    )
    item = function_item("exec_command", {"cmd": "true", "login": False})
    # A live session keeps a thread from being evicted as idle to make room.
    live = function_item("exec_command", {"cmd": "sleep 30", "login": False, "yield_time_ms": 250})
    with running_router(config) as router:
        for tid in ("t1", "t2", "t1"):  # an existing thread never counts twice
            done = completed(execute(router.stub, router_pb2.ExecuteRequest(
                thread_id=tid, turn=turn(), item=live)))  # fmt: skip
            assert done.HasField("session_id")
        with pytest.raises(grpc.RpcError) as err:
            execute(router.stub, router_pb2.ExecuteRequest(thread_id="t3", turn=turn(), item=item))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "limits.max_threads = 2" in (err.value.details() or "")
        # Ending a thread makes room again.
        router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="t1"), timeout=10)
        done = completed(execute(router.stub, router_pb2.ExecuteRequest(
            thread_id="t3", turn=turn(), item=item)))  # fmt: skip
        assert done.exit_code == 0

        two = turn()
        local = two.environments.add()
        local.environment_id = "local"
        two.environments.add().CopyFrom(local)
        with pytest.raises(grpc.RpcError) as err:
            router.stub.Project(
                router_pb2.ProjectRequest(thread_id="t3", turn=two, item=item), timeout=10
            )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "limits.max_environments_per_turn" in (err.value.details() or "")
