"""Router → exec-server daemon (SSH backend) → real sshd, end to end, and sshd lost mid-command."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from shellgate.execserver.server import RunningServer, start_server
from shellgate.router.runtime.environments.remote.config import DialSettings
from shellgate.router.runtime.environments.remote.environment import RemoteConfig
from shellgate.v1 import router_pb2

from tests.conftest import marked_pids
from tests.execserver_harness import daemon_config
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)
from tests.sshd import Sshd, sshd_server  # noqa: F401  (session fixture)
from tests.waiting import eventually


@pytest.fixture
def ssh_router(sshd_server: Sshd) -> Iterator[Router]:  # noqa: F811
    """A router whose environment `sshbox` is a daemon fronting the test sshd."""
    with running_router(router_config(local_environment=True)) as probe:
        daemon: RunningServer = probe.call(
            start_server(replace(daemon_config(), backend="ssh", ssh=sshd_server.config()))
        )
        dial = DialSettings(connect_timeout_ms=5_000)
        remote = RemoteConfig("sshbox", f"127.0.0.1:{daemon.port}", dial=dial)
        try:
            with running_router(router_config(environments=(remote,))) as router:
                yield router
        finally:
            probe.call(daemon.stop(2_000))


def _request(cmd: str, call_id: str) -> router_pb2.ExecuteRequest:
    args = {"cmd": cmd, "login": False, "yield_time_ms": 20_000}
    return router_pb2.ExecuteRequest(
        thread_id="ssh", turn=turn(environment_id="sshbox", cwd="/tmp"),
        item=function_item("exec_command", args, call_id),
    )  # fmt: skip


def test_command_runs_on_the_ssh_host_through_router_and_daemon(ssh_router: Router) -> None:
    envs = ssh_router.stub.ListEnvironments(router_pb2.ListEnvironmentsRequest(refresh=True))
    box = next(e for e in envs.environments if e.environment_id == "sshbox")
    assert box.reachable and box.remote and os.path.isabs(box.info.shell.path)
    done = completed(execute(ssh_router.stub, _request("echo via-ssh; exit 3", "s1")))
    assert done.exit_code == 3
    assert done.output_text.endswith("Output:\nvia-ssh\n")


def _sshd_ancestor(pid: int) -> int | None:
    for _ in range(16):
        stat = Path(f"/proc/{pid}/stat").read_text()
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if comm.startswith("sshd"):
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return None
    return None


@pytest.mark.allow_orphans
def test_sshd_lost_mid_command_reports_environment_lost_with_partial_output(
    ssh_router: Router, orphan_sweep: str
) -> None:
    stream = ssh_router.stub.Execute(_request("echo partial; sleep 30", "s2"), timeout=60)
    events = []
    for event in stream:
        events.append(event)
        if event.WhichOneof("event") == "output" and b"partial" in event.output.data:
            break
    remote = [
        p for p in marked_pids(orphan_sweep) if "sleep" in Path(f"/proc/{p}/cmdline").read_text()
    ]
    assert remote, "the remote command carries the test marker"
    session = _sshd_ancestor(remote[0])
    assert session is not None
    os.kill(session, signal.SIGKILL)  # the sshd serving this connection goes away
    events.extend(stream)
    done = completed(events)
    assert done.termination == router_pb2.TERMINATION_REASON_ENVIRONMENT_LOST
    assert done.exit_code == -1
    assert "partial\n" in done.output_text
    assert "[environment `sshbox` was lost: " in done.output_text
    # The next call reconnects, and the backend kills the group it lost track of.
    again = completed(execute(ssh_router.stub, _request("echo back", "s3")))
    assert again.exit_code == 0 and again.output_text.endswith("Output:\nback\n")
    eventually(
        lambda: not [p for p in remote if p in marked_pids(orphan_sweep)],
        "the lost group killed on the ssh host",
        10,
        0.1,
    )
