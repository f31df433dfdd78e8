"""Secrets planted in the router's and the daemon's own environment never reach commands,
not even through /proc/<ancestor>/environ (spec 06 §9, decision 3b)."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import exec_pb2, router_pb2, router_pb2_grpc, shell_pb2
from shellgate.v1 import exec_pb2_grpc as exec_grpc

from tests.execserver_harness import daemon_subprocess, start_request
from tests.router_harness import completed, execute, function_item, router_subprocess, turn

SECRETS = {
    "PLANTED_API_TOKEN": "tok-3f9a1c",
    "DEPLOY_KEY": "key-77b2e0",
    "MY_SECRET_THING": "sec-c0ffee",
    "lower_secret_name": "sec-lower1",
}


def _ancestry_script(stop_pid: int) -> str:
    # Print the environment of the command and of every ancestor up to the daemon itself.
    return (
        'env; echo ==; p=$$; while [ "$p" -gt 1 ]; do '
        "tr '\\0' '\\n' < /proc/$p/environ; echo \"== $p\"; "
        f'[ "$p" = {stop_pid} ] && break; '
        "p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done"
    )


def _assert_clean(text: str, daemon_pid: int) -> None:
    assert f"== {daemon_pid}" in text, "the walk did not reach the daemon"
    assert "SHELLGATE_TEST_MARK=" in text, "environ was not readable"
    for name, value in SECRETS.items():
        assert name not in text and value not in text, name


def _proc_environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


@pytest.mark.parametrize("ignore_default_excludes", [False, True])
def test_router_environment_secrets_reach_commands_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, ignore_default_excludes: bool
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    with router_subprocess(["--log-level", "WARNING"]) as (proc, port):
        own = _proc_environ(proc.pid)
        assert not any(name.encode() in own for name in SECRETS)
        assert not any(value.encode() in own for value in SECRETS.values())
        ctx = turn()
        ctx.shell_environment_policy.ignore_default_excludes = ignore_default_excludes
        item = function_item("exec_command", {"cmd": _ancestry_script(proc.pid), "login": False})
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            done = completed(
                execute(stub, router_pb2.ExecuteRequest(thread_id="s", turn=ctx, item=item))
            )
        assert done.exit_code == 0, done.output_text
        command_env, _, walk = done.output_text.partition("\n==\n")
        # The walk starts at the command itself; every ancestor after it (the router's own
        # environment block included) must hold none of them.
        ancestors = walk.split("\n== ", 1)[1]
        _assert_clean("== " + ancestors, proc.pid)
        # No variable of shellgate's own making reaches a command (Codex sets none).
        assert "SHELLGATE_" not in command_env.replace("SHELLGATE_TEST_MARK=", "")
        # Spec decision 3b: like Codex, a policy that ignores the default excludes passes the
        # router's secret-named variables on; the default policy strips them.
        for name, value in SECRETS.items():
            assert (f"{name}={value}" in command_env) is ignore_default_excludes, name


def test_daemon_environment_secrets_are_invisible_to_commands() -> None:
    env = dict(os.environ, **SECRETS)
    with daemon_subprocess(["--log-level", "WARNING"], env=env) as daemon:
        own = _proc_environ(daemon.proc.pid)
        assert not any(name.encode() in own for name in SECRETS)
        policy = shell_pb2.ShellEnvironmentPolicy(
            inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL, ignore_default_excludes=True
        )
        request = start_request(
            ["/bin/sh", "-c", _ancestry_script(daemon.proc.pid)], env_policy=policy
        )
        with grpc.insecure_channel(daemon.target) as channel:
            stub = exec_grpc.ExecServiceStub(channel)
            events = [m.event for m in stub.Start(request, timeout=30)]
        output = b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")
        exited = [e.exited for e in events if e.WhichOneof("event") == "exited"]
        assert exited and exited[0].status.code == 0
        _assert_clean(output.decode(errors="replace"), daemon.proc.pid)


def test_secret_named_overlay_is_still_the_callers_choice() -> None:
    # The scrub removes the daemon's own secrets; a variable the caller sets explicitly is
    # the caller's decision and reaches the command (so the test above is not vacuous).
    with daemon_subprocess(["--log-level", "WARNING"]) as daemon:
        request = start_request(["/bin/sh", "-c", "echo $CALLER_TOKEN"])
        request.env["CALLER_TOKEN"] = "given-by-caller"
        with grpc.insecure_channel(daemon.target) as channel:
            events = [
                m.event for m in exec_grpc.ExecServiceStub(channel).Start(request, timeout=30)
            ]
        output = b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")
        assert output == b"given-by-caller\n"
        assert exec_pb2.OUTPUT_STREAM_STDOUT in {
            e.output.stream for e in events if e.WhichOneof("event") == "output"
        }
