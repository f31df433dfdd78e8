"""The local default is safe on a shared host: a generated token only this user can read.

`shellgate serve` and `shellgate-execserver serve` with no token file and no mTLS on a
loopback address accept only callers that present the token they wrote to a 0600 file in
the user's runtime directory; `shellgate call`, the Python client, `shellgate token` and a
router reaching a local daemon find it there. Another local user can neither read the file
nor call without it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import exec_pb2, exec_pb2_grpc, router_pb2, router_pb2_grpc

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import completed, function_item, router_subprocess, turn

SHELLGATE = [sys.executable, "-m", "shellgate.router.cli"]
OTHER_USER = "shellgate-ssh"  # created by scripts/setup-test.sh


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private XDG_RUNTIME_DIR for this test (daemons and clients inherit it)."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    return base


def test_default_router_requires_its_generated_token(runtime_dir: Path) -> None:
    with router_subprocess(local_token=True) as (proc, port):
        token_file = runtime_dir / "shellgate" / f"router-{port}.token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert token_file.parent.stat().st_mode & 0o777 == 0o700
        token = token_file.read_text().strip()
        assert len(token) >= 40

        request = router_pb2.ListToolsRequest(thread_id="t", turn=turn())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            with pytest.raises(grpc.RpcError) as err:
                stub.ListTools(request, timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            printed = subprocess.run(
                [*SHELLGATE, "token", "--target", f"127.0.0.1:{port}"],
                capture_output=True, text=True, timeout=30, check=True,
            ).stdout.strip()  # fmt: skip
            assert printed == token
            auth = (("authorization", f"Bearer {printed}"),)
            assert stub.ListTools(request, timeout=10, metadata=auth).tools

        # The README's call line finds the token by itself.
        call = subprocess.run(
            [*SHELLGATE, "call", "--target", f"127.0.0.1:{port}", "--cmd", "echo hello"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert call.returncode == 0, call.stderr
        assert "hello" in call.stdout

        # So does the Python client.
        from shellgate.client import Client, turn_context

        with Client(f"127.0.0.1:{port}") as client:
            item = function_item("exec_command", {"cmd": "echo from-client", "login": False})
            done = client.run(item.raw_json, turn_context(approval_policy="never"))
            assert "from-client" in done.output_text

        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert not token_file.exists(), "the token file outlived the router"


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("runuser") is None, reason="needs root")
def test_another_local_user_cannot_read_the_token(runtime_dir: Path) -> None:
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        pytest.skip(f"no {OTHER_USER} user (scripts/setup-test.sh creates it)")
    # Let the other user reach the folder itself: only the token's own modes protect it.
    for folder in (runtime_dir, *runtime_dir.parents):
        if str(folder) in ("/", "/tmp"):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o011)
    with router_subprocess(local_token=True) as (_proc, port):
        token_file = runtime_dir / "shellgate" / f"router-{port}.token"
        attempt = subprocess.run(
            ["runuser", "-u", OTHER_USER, "--", "cat", str(token_file)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert attempt.returncode != 0
        assert "Permission denied" in attempt.stderr
        assert token_file.read_text().strip() not in attempt.stdout


def test_no_local_token_opt_out_trusts_local_callers(runtime_dir: Path) -> None:
    with router_subprocess(local_token=False) as (_proc, port):
        assert not (runtime_dir / "shellgate" / f"router-{port}.token").exists()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            stub.ListTools(router_pb2.ListToolsRequest(thread_id="t", turn=turn()), timeout=10)


def test_default_daemon_requires_its_token_and_a_local_router_finds_it(
    runtime_dir: Path, tmp_path: Path
) -> None:
    with daemon_subprocess(local_token=True) as daemon:
        port = int(daemon.target.rpartition(":")[2])
        assert (runtime_dir / "shellgate" / f"execserver-{port}.token").exists()
        with grpc.insecure_channel(daemon.target) as channel:
            with pytest.raises(grpc.RpcError) as err:
                exec_pb2_grpc.ExecServiceStub(channel).GetInfo(
                    exec_pb2.GetInfoRequest(), timeout=10
                )
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        config = tmp_path / "router.toml"
        config.write_text(
            f'[[environments]]\nid = "box"\ntarget = "{daemon.target}"\ninsecure = true\n'
        )
        with router_subprocess(["--config", str(config)]) as (_proc, router_port):
            item = function_item("exec_command", {"cmd": "echo via-daemon"})
            request = router_pb2.ExecuteRequest(
                thread_id="t", turn=turn(environment_id="box"), item=item
            )
            with grpc.insecure_channel(f"127.0.0.1:{router_port}") as channel:
                stub = router_pb2_grpc.ToolRouterServiceStub(channel)
                done = completed(list(stub.Execute(request, timeout=60)))
        assert "via-daemon" in done.output_text, done.output_text
