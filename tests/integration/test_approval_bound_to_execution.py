"""What the approver sees is what runs: the approval is bound to what executes.

A real `shellgate serve` child, real files, real bash:

* the turn's `shell_environment_policy.set` PATH is part of what "approved for session"
  remembers: an approval under PATH A does not cover the same command under PATH B, where
  the workspace's fake `touch` would run (it never runs without an approval);
* the cwd is pinned when the approval is asked for: a directory swapped for a symlink to
  another one before the answer fails the element, and nothing happens in the other one —
  locally, and on a real daemon (`box`), which reports the identity with its Stat and
  checks it again when it starts the process.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.common.process.cwd_pin import identify_cwd
from shellgate.common.sandbox import (
    SandboxMode,
    SandboxSpec,
    sandbox_unavailable_reason,
    wrap_argv,
)
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc, shell_pb2

from tests.integration.sandbox_support import router_with_daemon
from tests.router_harness import completed, execute, function_item, router_subprocess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def stub() -> Iterator[router_pb2_grpc.ToolRouterServiceStub]:
    with router_subprocess() as (_proc, port):
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            yield router_pb2_grpc.ToolRouterServiceStub(channel)
        finally:
            channel.close()


def _turn(
    cwd: Path, env_set: dict[str, str] | None = None, environment: str = "local"
) -> common_pb2.TurnContext:
    """Untrusted approvals (touch/rm ask), full access, the given PATH-style overrides."""
    policy = shell_pb2.ShellEnvironmentPolicy(
        inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL, set=env_set or {}
    )
    return common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id=environment, cwd=str(cwd))],
        approval_policy=common_pb2.ApprovalPolicy(kind=common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED),
        permission_profile=common_pb2.PermissionProfile(
            kind=common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS
        ),
        shell_environment_policy=policy,
    )


def _item(cmd: str, call_id: str) -> common_pb2.ToolCallItem:
    return function_item("exec_command", {"cmd": cmd, "login": False}, call_id)


def _run(
    stub: router_pb2_grpc.ToolRouterServiceStub,
    thread: str,
    turn: common_pb2.TurnContext,
    cmd: str,
    call_id: str,
) -> list[router_pb2.ExecuteResponse]:
    request = router_pb2.ExecuteRequest(thread_id=thread, turn=turn, item=_item(cmd, call_id))
    return execute(stub, request)


def _asked(events: list[router_pb2.ExecuteResponse]) -> router_pb2.ApprovalRequired:
    last = events[-1]
    assert last.WhichOneof("event") == "approval_required", [e.WhichOneof("event") for e in events]
    return last.approval_required


def _resume(
    stub: router_pb2_grpc.ToolRouterServiceStub,
    thread: str,
    turn: common_pb2.TurnContext,
    approval_id: str,
    decision: int,
) -> router_pb2.ExecutionCompleted:
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn,
        resume=router_pb2.ResumeCall(approval_id=approval_id, decision=decision),
    )
    return completed(execute(stub, request))


def _fake_touch(bin_dir: Path, marker: Path) -> None:
    bin_dir.mkdir()
    fake = bin_dir / "touch"
    fake.write_text(f"#!/bin/sh\necho fake >> '{marker}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)


def test_a_path_override_change_asks_again(
    stub: router_pb2_grpc.ToolRouterServiceStub, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a_bin, b_bin, marker = tmp_path / "a-bin", tmp_path / "b-bin", tmp_path / "fake-ran"
    a_bin.mkdir()
    _fake_touch(b_bin, marker)
    path = os.environ.get("PATH", "/usr/bin:/bin")
    turn_a = _turn(ws, {"PATH": f"{a_bin}:{path}"})
    turn_b = _turn(ws, {"PATH": f"{b_bin}:{path}"})

    # PATH A: asked, approved for the session; the real touch runs.
    ask = _asked(_run(stub, "path-t", turn_a, "touch notes.txt", "c1"))
    done = _resume(
        stub, "path-t", turn_a, ask.approval_id, router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION
    )
    assert done.exit_code == 0 and (ws / "notes.txt").exists()
    # The same command under PATH A again: the session approval holds.
    again = _run(stub, "path-t", turn_a, "touch notes.txt", "c2")
    assert completed(again).exit_code == 0

    # PATH B resolves `touch` to the workspace's fake: asked again, with another digest.
    ask_b = _asked(_run(stub, "path-t", turn_b, "touch notes.txt", "c3"))
    assert ask_b.approval_key_digest != ask.approval_key_digest
    assert not marker.exists()
    denied = _resume(stub, "path-t", turn_b, ask_b.approval_id, router_pb2.APPROVAL_DECISION_DENIED)
    assert "rejected by user" in denied.output_text
    assert not marker.exists()


def test_no_amendment_is_offered_under_a_path_override(
    stub: router_pb2_grpc.ToolRouterServiceStub, tmp_path: Path
) -> None:
    # A prefix rule cannot carry the PATH it was approved under: no amendment is offered.
    with_amendment = router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT
    plain = _asked(_run(stub, "amend-t", _turn(tmp_path), "touch a.txt", "c1"))
    assert plain.HasField("proposed_amendment")
    assert with_amendment in plain.available_decisions

    bin_dir, marker = tmp_path / "bin", tmp_path / "fake-ran"
    _fake_touch(bin_dir, marker)
    turn = _turn(tmp_path, {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
    ask = _asked(_run(stub, "amend-t", turn, "touch b.txt", "c2"))
    assert not ask.HasField("proposed_amendment")
    assert with_amendment not in ask.available_decisions
    assert router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION in ask.available_decisions
    with pytest.raises(grpc.RpcError) as refused:
        _resume(stub, "amend-t", turn, ask.approval_id, with_amendment)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not on offer" in (refused.value.details() or "")
    assert not marker.exists()


def test_no_override_keeps_codex_digest(
    stub: router_pb2_grpc.ToolRouterServiceStub, tmp_path: Path
) -> None:
    # Without resolution overrides the digest shown is projection C's (Codex's key).
    ask = _asked(_run(stub, "plain-t", _turn(tmp_path), "touch plain.txt", "c1"))
    projected = stub.Project(
        router_pb2.ProjectRequest(
            thread_id="plain-t", turn=_turn(tmp_path), item=_item("touch plain.txt", "c1")
        ),
        timeout=30,
    )
    assert ask.approval_key_digest in str(projected)


def _bwrap_runs() -> bool:
    return not sandbox_unavailable_reason()


# Each cwd case runs unsandboxed and under bubblewrap (skipped where it cannot run).
BOTH_PROFILES = pytest.mark.parametrize(
    "profile",
    [
        common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
        pytest.param(
            common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE,
            marks=pytest.mark.skipif(not _bwrap_runs(), reason="bubblewrap cannot run here"),
        ),
    ],
    ids=["unsandboxed", "bubblewrap"],
)


@pytest.fixture(scope="module")
def daemon_stub(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[router_pb2_grpc.ToolRouterServiceStub]:
    """A router whose environment `box` is a real daemon on this host."""
    with router_with_daemon(tmp_path_factory.mktemp("box")) as router:
        yield router.stub


@pytest.fixture(params=["local", "box"])
def where(
    request: pytest.FixtureRequest,
    stub: router_pb2_grpc.ToolRouterServiceStub,
    daemon_stub: router_pb2_grpc.ToolRouterServiceStub,
) -> tuple[router_pb2_grpc.ToolRouterServiceStub, str]:
    """The router stub and environment id: the embedded environment, then a daemon."""
    # Both module fixtures are arguments, so they start before the orphan marker is set.
    return (stub if request.param == "local" else daemon_stub), request.param


@BOTH_PROFILES
def test_a_cwd_swapped_after_the_ask_runs_nothing_elsewhere(
    where: tuple[router_pb2_grpc.ToolRouterServiceStub, str], tmp_path: Path, profile: int
) -> None:
    stub, environment = where
    proj, other = tmp_path / "proj", tmp_path / "other"
    for d in (proj, other):
        d.mkdir()
        (d / "keep.txt").write_text(d.name)
    turn = _turn(proj, environment=environment)
    turn.permission_profile.kind = profile
    thread = f"swap-{profile}-{environment}"
    ask = _asked(_run(stub, thread, turn, "rm -f keep.txt", "c1"))
    assert ask.cwd == str(proj)

    # Between the ask and the answer the approved directory becomes a symlink elsewhere.
    proj.rename(tmp_path / "proj.orig")
    proj.symlink_to(other, target_is_directory=True)

    done = _resume(stub, thread, turn, ask.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    assert (other / "keep.txt").read_text() == "other"
    assert (tmp_path / "proj.orig" / "keep.txt").exists()
    assert "no longer the directory that was approved" in done.output_text, done.output_text
    assert not done.success


@BOTH_PROFILES
def test_an_unchanged_cwd_runs_the_approved_command(
    where: tuple[router_pb2_grpc.ToolRouterServiceStub, str], tmp_path: Path, profile: int
) -> None:
    stub, environment = where
    (tmp_path / "keep.txt").write_text("x")
    turn = _turn(tmp_path, environment=environment)
    turn.permission_profile.kind = profile
    thread = f"same-{profile}-{environment}"
    ask = _asked(_run(stub, thread, turn, "rm -f keep.txt && pwd", "c1"))
    done = _resume(stub, thread, turn, ask.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
    assert done.exit_code == 0 and not (tmp_path / "keep.txt").exists()
    assert str(tmp_path) in done.output_text


@pytest.mark.skipif(not _bwrap_runs(), reason="bubblewrap cannot run here")
def test_the_sandboxed_side_checks_the_cwd_again(tmp_path: Path) -> None:
    # bubblewrap's --chdir takes a path: a swap between the spawn's check and bubblewrap's
    # chdir is caught on the sandboxed side, before the command is exec'd there.
    proj, other = tmp_path / "proj", tmp_path / "other"
    for d in (proj, other):
        d.mkdir()
        (d / "keep.txt").write_text(d.name)
    identity = identify_cwd(str(proj))
    proj.rename(tmp_path / "proj.orig")
    proj.symlink_to(other, target_is_directory=True)
    spec = SandboxSpec(SandboxMode.WORKSPACE_WRITE, (str(tmp_path),), network_access=False)
    command = ("/bin/sh", "-c", "rm -f keep.txt")

    argv, extra = wrap_argv(command, str(proj), spec, cwd_identity=identity)
    env = {**os.environ, **extra}
    ran = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=30)
    assert ran.returncode == 126, ran
    assert b"no longer the directory that was approved" in ran.stderr
    assert (other / "keep.txt").exists()

    # The same launch without the approved identity deletes the other directory's file.
    argv, extra = wrap_argv(command, str(proj), spec)
    ran = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=30)
    assert ran.returncode == 0, ran
    assert not (other / "keep.txt").exists()


def test_shell_command_also_runs_only_in_the_approved_directory(
    stub: router_pb2_grpc.ToolRouterServiceStub, tmp_path: Path
) -> None:
    # The classic runtime (shell_command) spawns through the same pinned cwd.
    proj, other = tmp_path / "proj", tmp_path / "other"
    for d in (proj, other):
        d.mkdir()
        (d / "keep.txt").write_text(d.name)
    turn = _turn(proj)
    turn.shell_tool_type = common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND
    item = function_item("shell_command", {"command": "rm -f keep.txt", "login": False}, "c1")
    request = router_pb2.ExecuteRequest(thread_id="classic-swap", turn=turn, item=item)
    ask = _asked(execute(stub, request))
    proj.rename(tmp_path / "proj.orig")
    proj.symlink_to(other, target_is_directory=True)
    done = _resume(
        stub, "classic-swap", turn, ask.approval_id, router_pb2.APPROVAL_DECISION_APPROVED
    )
    assert (other / "keep.txt").exists() and (tmp_path / "proj.orig" / "keep.txt").exists()
    assert "no longer the directory that was approved" in done.output_text, done.output_text
