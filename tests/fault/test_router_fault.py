"""Router faults: the exec-server killed mid-stream (and coming back), a client cancelling an
Execute, and a slow consumer of a flooding process."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import grpc
import pytest
from shellgate.router.runtime.environments.remote.config import DialSettings
from shellgate.router.runtime.environments.remote.environment import RemoteConfig
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.conftest import marked_pids
from tests.execserver_harness import daemon_subprocess
from tests.router_harness import (
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


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _remote_request(command: str, call_id: str) -> router_pb2.ExecuteRequest:
    # Remote environments serve unified exec (Direct mode); a long yield keeps the stream
    # open for the whole command.
    args = {"cmd": command, "login": False, "yield_time_ms": 20_000}
    return router_pb2.ExecuteRequest(
        thread_id="remote",
        turn=turn(environment_id="box", cwd="/tmp"),
        item=function_item("exec_command", args, call_id),
    )


@pytest.mark.slow
@pytest.mark.allow_orphans
def test_daemon_kill_9_mid_stream_then_reconnect(orphan_sweep: str) -> None:
    port = _free_port()
    listen = ["--listen", f"127.0.0.1:{port}", "--log-level", "WARNING"]
    remote = RemoteConfig("box", f"127.0.0.1:{port}",
                          dial=DialSettings(connect_timeout_ms=2_000, call_timeout_ms=5_000))  # fmt: skip
    config = router_config(environments=(remote,))
    with running_router(config) as router, daemon_subprocess(listen) as daemon:
        stream = router.stub.Execute(_remote_request("echo before; sleep 30", "k1"), timeout=60)
        events = []
        for event in stream:
            events.append(event)
            if event.WhichOneof("event") == "output" and b"before" in event.output.data:
                break
        os.kill(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(10)
        events.extend(stream)
        done = completed(events)
        assert done.termination == router_pb2.TERMINATION_REASON_ENVIRONMENT_LOST
        assert done.exit_code == -1
        assert "before\n" in done.output_text
        assert "\n[environment `box` was lost: " in done.output_text
        # The daemon's children die with it (its guardian kills their groups).
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)
        # While it is down, calls answer "unavailable" without starting anything.
        down = completed(execute(router.stub, _remote_request("echo nope", "k2")))
        assert down.termination == router_pb2.TERMINATION_REASON_ENVIRONMENT_LOST
        assert "environment `box` is unavailable" in down.output_text
    # A new daemon on the same port: the router reconnects on the next call.
    with running_router(config) as router, daemon_subprocess(listen):
        done = completed(execute(router.stub, _remote_request("echo back", "k3")))
        assert done.exit_code == 0 and done.output_text.endswith("Output:\nback\n")


@pytest.mark.slow
def test_router_reconnects_to_a_restarted_daemon_without_restart(orphan_sweep: str) -> None:
    port = _free_port()
    listen = ["--listen", f"127.0.0.1:{port}", "--log-level", "WARNING"]
    remote = RemoteConfig("box", f"127.0.0.1:{port}",
                          dial=DialSettings(connect_timeout_ms=2_000, call_timeout_ms=5_000))  # fmt: skip
    with running_router(router_config(environments=(remote,))) as router:
        with daemon_subprocess(listen) as daemon:
            first = completed(execute(router.stub, _remote_request("echo one", "r1")))
            assert first.exit_code == 0
            os.kill(daemon.proc.pid, signal.SIGKILL)
            daemon.proc.wait(10)
        with daemon_subprocess(listen):
            # The first call after the loss may see the dead connection; the next must work.
            outcomes = []
            for i in range(3):
                done = completed(execute(router.stub, _remote_request("echo two", f"r{i + 2}")))
                outcomes.append(done.termination)
                if done.exit_code == 0:
                    break
            assert outcomes[-1] == router_pb2.TERMINATION_REASON_EXITED, outcomes


def test_client_cancel_kills_classic_command(orphan_sweep: str) -> None:
    with running_router() as router:
        request = router_pb2.ExecuteRequest(
            thread_id="cancel",
            turn=turn(shell_tool=SHELL_COMMAND),
            item=function_item(
                "shell_command", {"command": "echo started; sleep 60", "login": False}
            ),
        )
        stream = router.stub.Execute(request, timeout=60)
        for event in stream:
            if event.WhichOneof("event") == "output":
                break
        assert marked_pids(orphan_sweep), "the command should be running"
        stream.cancel()
        # The router kills the group promptly, not only at shutdown.
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


def test_client_cancel_keeps_a_unified_session(orphan_sweep: str) -> None:
    with running_router() as router:
        request = router_pb2.ExecuteRequest(
            thread_id="keep",
            turn=turn(),
            item=function_item(
                "exec_command",
                {"cmd": "echo started; sleep 60", "login": False, "yield_time_ms": 20_000},
            ),
        )
        stream = router.stub.Execute(request, timeout=60)
        session = None
        for event in stream:
            if event.WhichOneof("event") == "started":
                session = event.started.session_id
            if event.WhichOneof("event") == "output":
                break
        stream.cancel()
        time.sleep(0.5)
        sessions = router.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id="keep"))
        assert [(s.session_id, s.running) for s in sessions.sessions] == [(session, True)]
        assert marked_pids(orphan_sweep)
        ended = router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="keep"))
        assert ended.terminated_sessions == 1
        eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


def _flood_slow_consumer(pause_s: float) -> tuple[int, int, int, router_pb2.ExecutionCompleted]:
    """Flood through a router subprocess, read nothing for pause_s; (baseline, peak, bytes)."""
    with (
        router_subprocess(["--log-level", "WARNING"]) as (proc, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        request = router_pb2.ExecuteRequest(
            thread_id="flood",
            turn=turn(shell_tool=SHELL_COMMAND),
            item=function_item(
                "shell_command",
                {"command": "yes " + "x" * 200, "login": False, "timeout_ms": 4_000},
            ),
        )
        stream = stub.Execute(request, timeout=60)
        assert next(stream).WhichOneof("event") == "projection"
        baseline = peak = _rss_kib(proc.pid)
        # Do not read: gRPC flow control must push back instead of the router buffering.
        deadline = time.monotonic() + pause_s
        while time.monotonic() < deadline:
            time.sleep(0.2)
            peak = max(peak, _rss_kib(proc.pid))
        received = 0
        done = None
        for event in stream:
            if event.WhichOneof("event") == "output":
                received += len(event.output.data)
            elif event.WhichOneof("event") == "completed":
                done = event.completed
        peak = max(peak, _rss_kib(proc.pid))
    print("router rss kib baseline", baseline, "peak", peak, "streamed bytes", received)
    assert done is not None
    return baseline, peak, received, done


@pytest.mark.slow
def test_slow_consumer_of_a_flood_still_gets_a_paired_timeout() -> None:
    _, _, received, done = _flood_slow_consumer(pause_s=2.0)
    assert done.termination == router_pb2.TERMINATION_REASON_TIMED_OUT
    assert done.exit_code == 124
    assert received > 1024 * 1024  # the consumer did get the flood once it read


@pytest.mark.slow
def test_slow_consumer_of_a_flood_keeps_router_memory_bounded() -> None:
    baseline, peak, _, _ = _flood_slow_consumer(pause_s=4.0)
    assert peak - baseline < 96 * 1024, (baseline, peak)
