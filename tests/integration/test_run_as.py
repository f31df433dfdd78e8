"""`run_as`: commands run as another, unprivileged user and cannot read the service's files."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.v1 import common_pb2, router_pb2

from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)

OTHER_USER = "shellgate-ssh"  # created by scripts/setup-test.sh

pytestmark = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and util-linux setpriv"
)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A workspace both the service and the other user can enter (pytest's tmp is 0700)."""
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        pytest.skip(f"no {OTHER_USER} user (scripts/setup-test.sh creates it)")
    path = Path(tempfile.mkdtemp(prefix="shellgate-run-as-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _run(router: Router, command: str, cwd: Path, profile: int) -> router_pb2.ExecutionCompleted:
    request = router_pb2.ExecuteRequest(
        thread_id="t",
        turn=turn(profile=profile, cwd=str(cwd), approval=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        item=function_item("exec_command", {"cmd": command, "login": False}),
    )
    return completed(execute(router.stub, request))


@pytest.mark.parametrize(
    "profile",
    [
        common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
        common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE,
    ],
)
def test_commands_run_as_the_configured_user(
    shared_dir: Path, tmp_path: Path, profile: int
) -> None:
    if (
        profile == common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
        and shutil.which("bwrap") is None
    ):
        pytest.skip("bubblewrap not installed")
    secret = tmp_path / "service-secret"
    secret.write_text("only-the-service-reads-this\n")
    secret.chmod(0o600)
    config = router_config(local_cwd=str(shared_dir), run_as=OTHER_USER)
    with running_router(config) as router:
        done = _run(
            router,
            f"id -un; grep -c . /proc/self/status >/dev/null; grep CapEff /proc/self/status; "
            f"cat {secret}; kill -0 {os.getpid()} && echo can-signal; echo made > mine.txt",
            shared_dir,
            profile,
        )
    text = done.output_text
    assert f"\n{OTHER_USER}\n" in f"\n{text}", text
    assert "CapEff:\t0000000000000000" in text
    assert "only-the-service-reads-this" not in text and "Permission denied" in text
    assert "can-signal" not in text
    assert (shared_dir / "mine.txt").stat().st_uid == pwd.getpwnam(OTHER_USER).pw_uid


def test_run_as_root_or_unknown_user_refuses_start() -> None:
    from shellgate.router.service.config import ConfigError

    for user in ("root", "no-such-user-here"):
        with pytest.raises(ConfigError, match="run_as"), running_router(router_config(run_as=user)):
            pass
