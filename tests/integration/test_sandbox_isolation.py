"""The bubblewrap sandbox against Codex 0.169's observed behaviour, through a real router.

What `codex sandbox` 0.169.0 was observed to do (workspace-write, network off): `.git`
stays read-only inside the writable workspace, `socket(AF_INET)` fails with EPERM while
`AF_UNIX` works, stdin `/dev/null` is open read-only, the command runs in its own PID
namespace and session. shellgate also masks the service's own credential files and lets
nothing a sandboxed command starts outlive it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from shellgate.v1 import common_pb2, router_pb2

from tests.proc_scan import pids_with
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)
from tests.waiting import eventually

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]

WORKSPACE_WRITE = common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
READ_ONLY = common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY


def _run(
    router: Router, command: str, cwd: Path, profile: int, call_id: str = "c1"
) -> router_pb2.ExecutionCompleted:
    request = router_pb2.ExecuteRequest(
        thread_id="t",
        turn=turn(profile=profile, cwd=str(cwd), approval=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        item=function_item("shell_command", {"command": command, "login": False}, call_id),
    )
    return completed(execute(router.stub, request))


def test_workspace_write_keeps_git_read_only(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        done = _run(
            router, "echo x > .git/probe; echo rc=$?; echo y > ok.txt", tmp_path, WORKSPACE_WRITE
        )
    assert "Read-only file system" in done.output_text
    assert "rc=1" in done.output_text
    assert not (tmp_path / ".git" / "probe").exists()
    assert (tmp_path / "ok.txt").read_text() == "y\n"


def test_network_off_denies_inet_sockets_but_not_unix(tmp_path: Path) -> None:
    probe = (
        "import socket\n"
        "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):\n"
        "    try:\n"
        "        socket.socket(fam).close(); print(fam.name, 'ok')\n"
        "    except OSError as e:\n"
        "        print(fam.name, 'errno', e.errno)\n"
    )
    (tmp_path / "probe.py").write_text(probe)
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        for profile in (READ_ONLY, WORKSPACE_WRITE):
            done = _run(router, "python3 probe.py", tmp_path, profile)
            assert "AF_INET errno 1" in done.output_text, done.output_text
            assert "AF_INET6 errno 1" in done.output_text
            assert "AF_UNIX ok" in done.output_text


def test_stdin_is_dev_null_read_only_in_every_profile(tmp_path: Path) -> None:
    check = 'python3 -c \'import fcntl, os; print("mode", fcntl.fcntl(0, fcntl.F_GETFL) & os.O_ACCMODE, os.path.realpath("/proc/self/fd/0"))\''
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        for profile in (
            READ_ONLY,
            WORKSPACE_WRITE,
            common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
        ):
            done = _run(router, check, tmp_path, profile)
            assert f"mode {os.O_RDONLY} /dev/null" in done.output_text, done.output_text


def test_sandboxed_command_cannot_see_or_signal_the_router(tmp_path: Path) -> None:
    me = os.getpid()  # the in-process router runs in this process
    command = f"ls /proc | grep -c '^[0-9]'; kill -0 {me} && echo visible || echo invisible"
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        done = _run(router, command, tmp_path, READ_ONLY)
    lines = done.output_text.splitlines()
    assert "invisible" in lines, done.output_text
    assert int(next(line for line in lines if line.isdigit())) < 10


@pytest.mark.parametrize("profile", [READ_ONLY, WORKSPACE_WRITE])
def test_escaped_descendants_die_with_the_sandboxed_command(tmp_path: Path, profile: int) -> None:
    token = f"escape-{os.getpid()}-{profile}"

    def named_sleep(tag: str) -> str:
        return f"bash -c 'exec -a {token}-{tag} sleep 300'"

    escapes = (
        f"setsid {named_sleep('a')} & "
        f"({named_sleep('b')} &) ; "
        f'nohup setsid sh -c "{named_sleep("c")}" >/dev/null 2>&1 & '
        f"sleep 0.5; echo running=$(ps -eo args | grep -c '^{token}-')"
    )
    with running_router(router_config(local_cwd=str(tmp_path))) as router:
        done = _run(router, escapes, tmp_path, profile)
        assert "running=3" in done.output_text, done.output_text  # every escape started
        eventually(lambda: pids_with(token) == [], "every escape gone", 5)


def test_service_credentials_read_empty_inside_the_sandbox(tmp_path: Path) -> None:
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    token_file = secret_dir / "tokens"
    token_file.write_text("alice s3cr3t-token-value\n")
    config = router_config(local_cwd=str(tmp_path), token_file=str(token_file))
    with running_router(config) as router:
        metadata = (("authorization", "Bearer s3cr3t-token-value"),)
        request = router_pb2.ExecuteRequest(
            thread_id="t",
            turn=turn(
                profile=READ_ONLY, cwd=str(tmp_path), approval=common_pb2.APPROVAL_POLICY_KIND_NEVER
            ),
            item=function_item(
                "shell_command", {"command": f"cat {token_file}; echo end", "login": False}
            ),
        )
        done = completed(list(router.stub.Execute(request, timeout=60, metadata=metadata)))
    assert "s3cr3t" not in done.output_text
    assert "end" in done.output_text
