"""Nothing a call starts outlives it, sandboxed or not: `setsid`, double-fork and nohup escapes
die at call end, timeout, Interrupt, EndThread and when the router is SIGKILLed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.common.process.escapes import (
    EscapeReaper,
    disable_escape_reaping,
    enable_escape_reaping,
)
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.proc_scan import pids_with
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


@pytest.fixture(autouse=True)
def escape_reaping() -> Iterator[None]:
    """The daemons' command lines turn reaping on; in-process routers here do it by hand."""
    enable_escape_reaping()
    try:
        yield
    finally:
        disable_escape_reaping()


PROFILES = {
    "danger-full-access": common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
    "read-only": common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY,
}


def _escapes(token: str) -> str:
    def named(tag: str) -> str:
        return f"bash -c 'exec -a {token}-{tag} sleep 300'"

    return (
        f"setsid {named('a')} & "
        f"({named('b')} &) ; "
        f'nohup setsid sh -c "{named("c")}" >/dev/null 2>&1 & '
        f'(setsid sh -c "{named("d")} &" &) ; '
        f"sleep 0.5; echo running=$(ps -eo args | grep -c '^{token}-')"
    )


def _request(command: str, profile: int, call_id: str, **args: object) -> router_pb2.ExecuteRequest:
    return router_pb2.ExecuteRequest(
        thread_id="t",
        turn=turn(profile=profile, approval=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        item=function_item("exec_command", {"cmd": command, "login": False, **args}, call_id),
    )


def _classic(command: str, call_id: str, timeout_ms: int) -> router_pb2.ExecuteRequest:
    return router_pb2.ExecuteRequest(
        thread_id="t2",
        turn=turn(profile=PROFILES["danger-full-access"],
                  shell_tool=common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND,
                  approval=common_pb2.APPROVAL_POLICY_KIND_NEVER,
                  features=common_pb2.FeatureSwitches(unified_exec=False)),
        item=function_item("shell_command", {
            "command": command, "timeout_ms": timeout_ms, "login": False}, call_id),
    )  # fmt: skip


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_escapes_die_when_the_command_exits(tmp_path: Path, profile: str) -> None:
    token = f"esc-exit-{os.getpid()}-{profile}"
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        done = completed(execute(router.stub, _request(_escapes(token), PROFILES[profile], "x")))
        assert "running=4" in done.output_text, done.output_text
        eventually(lambda: not pids_with(token), "every escape gone", 30.0)


def test_escapes_die_on_timeout_interrupt_and_end_thread(tmp_path: Path) -> None:
    full = PROFILES["danger-full-access"]
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        # A session that yields with its escapes running, then EndThread.
        token = f"esc-end-{os.getpid()}"
        held = _escapes(token) + "; sleep 300"
        done = completed(execute(router.stub, _request(held, full, "s", yield_time_ms=1500)))
        assert done.session_id and "running=4" in done.output_text, done.output_text
        assert pids_with(token), "escapes should live while their session runs"
        router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="t"), timeout=30)
        eventually(lambda: not pids_with(token), "every escape gone", 30.0)

        # Interrupt of a running classic call (a unified session outlives its call).
        token = f"esc-int-{os.getpid()}"
        events: list[router_pb2.ExecuteResponse] = []
        request = _classic(_escapes(token) + "; sleep 300", "i", 60_000)
        worker = threading.Thread(target=lambda: events.extend(execute(router.stub, request)))
        worker.start()
        with contextlib.suppress(AssertionError):  # the interrupt is sent either way
            eventually(lambda: len(pids_with(token)) >= 4, "the four escapes running", 10)
        router.stub.Interrupt(router_pb2.InterruptRequest(thread_id="t2", call_id="i"), timeout=10)
        worker.join(30)
        assert completed(events).termination == router_pb2.TERMINATION_REASON_CANCELLED
        eventually(lambda: not pids_with(token), "every escape gone", 30.0)

        # A classic shell_command past its timeout.
        token = f"esc-timeout-{os.getpid()}"
        classic = _classic(_escapes(token) + "; sleep 300", "c", 1500)
        timed_out = completed(execute(router.stub, classic))
        assert timed_out.exit_code == 124, timed_out.output_text
        eventually(lambda: not pids_with(token), "every escape gone", 30.0)


@pytest.mark.allow_orphans
def test_escapes_die_with_a_killed_router(tmp_path: Path) -> None:
    token = f"esc-kill9-{os.getpid()}"
    with router_subprocess() as (proc, port), grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = router_pb2_grpc.ToolRouterServiceStub(ch)
        request = _request(_escapes(token) + "; sleep 300", PROFILES["danger-full-access"], "k",
                           yield_time_ms=1500)  # fmt: skip
        done = completed(list(stub.Execute(request, timeout=60)))
        assert "running=4" in done.output_text, done.output_text
        time.sleep(1.0)  # a sweep interval: the escapes are now guarded
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        eventually(lambda: not pids_with(token), "every escape gone", 10)


def test_an_escape_of_a_root_recorded_late_is_still_killed() -> None:
    # On a loaded box the spawning thread may wait long for the GIL between the fork and
    # `root_started`, while the command already starts its escapes: they must still count
    # as the root's (its start is taken before the fork).
    token = f"esc-late-{os.getpid()}"
    reaper = EscapeReaper(register=lambda _pgid: None, unregister=lambda _pgid: None,
                          excluded=lambda: ())  # fmt: skip
    with reaper.spawning() as since:
        root = subprocess.Popen(
            ["bash", "-c", f"setsid bash -c 'exec -a {token} sleep 300' & sleep 0.1"],
            start_new_session=True,
        )
        time.sleep(0.3)  # the escape runs before the root is recorded
        reaper.root_started(root.pid, since)
    root.wait(10)
    reaper.root_ended(root.pid)

    def swept() -> bool:
        reaper.sweep()
        return not pids_with(token)

    eventually(swept, "the late root's escape killed", 10, 0.1)
