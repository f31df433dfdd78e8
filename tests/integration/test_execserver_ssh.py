"""The SSH backend against a real sshd: lost connections and the daemon fronting SSH."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from shellgate.common.errors import EnvironmentLostError, HostKeyMismatchError
from shellgate.common.process.base import SpawnRequest
from shellgate.execserver.backends.ssh import SshBackend
from shellgate.execserver.config import ProcessLimits
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2 as shell_pb

from tests.conftest import marked_pids
from tests.execserver_harness import (
    collect,
    daemon_config,
    exec_stub,
    in_process_daemon,
    output_of,
    start_request,
)
from tests.sshd import (
    TEST_USER,
    Sshd,
    login_user,
    sshd_server,  # noqa: F401  (session fixture)
)
from tests.waiting import eventually

LIMITS = ProcessLimits(kill_grace_ms=500)


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.allow_orphans
def test_dropped_connection_reports_environment_lost_and_reconnects(
    sshd_server: Sshd, orphan_sweep: str  # noqa: F811
) -> None:
    async def main() -> None:
        backend = SshBackend(sshd_server.config(), LIMITS)
        try:
            env = dict(os.environ)
            proc = await backend.start(SpawnRequest(("sh", "-c", "sleep 60 & sleep 60"), "/tmp", env))
            assert proc.pid is not None
            await asyncio.sleep(0.3)
            # Kill the sshd process serving this connection: the channel dies with it.
            os.kill(_ppid(proc.pid), signal.SIGKILL)
            status = await asyncio.wait_for(proc.wait(), 15)
            assert status.environment_lost
            await proc.terminate()
            again = await backend.start(SpawnRequest(("echo", "back"), "/tmp", env))
            data = b"".join([c.data async for c in again.output()])
            assert data == b"back\n"
            await again.terminate()
        finally:
            await backend.aclose()

    asyncio.run(main())
    eventually(lambda: marked_pids(orphan_sweep) == [], "every marked process gone", 5)


def test_unpinned_or_wrong_host_key_is_refused(sshd_server: Sshd, tmp_path: Path) -> None:  # noqa: F811
    wrong = tmp_path / "known_hosts"
    wrong.write_text(
        f"[127.0.0.1]:{sshd_server.port} ssh-ed25519 "
        "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    )

    async def main() -> None:
        for config in (
            sshd_server.config(known_hosts_file=""),
            sshd_server.config(known_hosts_file=str(wrong)),
        ):
            backend = SshBackend(config, LIMITS)
            with pytest.raises((HostKeyMismatchError, EnvironmentLostError)):
                await backend.start(SpawnRequest(("true",), "/tmp", {}))
            await backend.aclose()

    asyncio.run(main())


def test_daemon_fronting_ssh_serves_the_same_contract(sshd_server: Sshd) -> None:  # noqa: F811
    config = replace(daemon_config(), backend="ssh", ssh=sshd_server.config())

    async def main() -> None:
        async with in_process_daemon(config) as daemon, exec_stub(f"127.0.0.1:{daemon.port}") as stub:
            info = await stub.GetInfo(pb.GetInfoRequest())
            assert info.backend == pb.EXEC_BACKEND_SSH and os.path.isabs(info.shell.path)
            events = await collect(stub.Start(start_request(["sh", "-c", "echo remote; exit 5"])))
            assert output_of(events) == b"remote\n"
            # Output may follow the exit (it takes the next seq once known, spec 05 §5.3).
            exited = [e.exited for e in events if e.WhichOneof("event") == "exited"]
            assert [x.status.code for x in exited] == [5]
            assert events[-1].WhichOneof("event") == "closed"

    asyncio.run(main())


def test_ssh_backend_reports_and_applies_the_remote_sandbox(sshd_server: Sshd) -> None:  # noqa: F811
    config = replace(daemon_config(), backend="ssh", ssh=sshd_server.config())
    ro = shell_pb.SandboxRequest(mode=shell_pb.SANDBOX_MODE_READ_ONLY)
    script = "echo $CODEX_SANDBOX_NETWORK_DISABLED; touch /sg-ssh-ro-probe-$$ 2>&1; exit 1"

    async def main() -> None:
        async with in_process_daemon(config) as daemon, exec_stub(f"127.0.0.1:{daemon.port}") as stub:
            info = await stub.GetInfo(pb.GetInfoRequest())
            if not info.capabilities.sandbox:
                assert info.capabilities.sandbox_unavailable_reason
                pytest.skip(info.capabilities.sandbox_unavailable_reason)
            events = await collect(stub.Start(start_request(["sh", "-c", script], sandbox=ro)))
            assert events[0].started.sandboxed
            text = output_of(events)
            assert text.startswith(b"1\n") and b"Read-only file system" in text
            assert events[-1].closed.sandbox_denied
            # A host without bubblewrap refuses; it never runs the request unsandboxed.
            servicer: Any = daemon.servicer
            servicer._host = replace(
                servicer._host, sandbox=False, bwrap_path="",
                sandbox_unavailable_reason="bwrap not found on the remote host",
            )
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await collect(stub.Start(start_request(["true"], sandbox=ro)))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "bwrap not found" in (err.value.details() or "")

    asyncio.run(main())


def test_ssh_tests_log_in_as_the_dedicated_user(sshd_server: Sshd) -> None:  # noqa: F811
    # Commands run through the login user's shell (and Debian's bash sources its ~/.bashrc
    # for ssh commands): the tests use an unprivileged user with an empty profile when
    # scripts/setup-test.sh could create one, not the invoking user.
    assert sshd_server.user == login_user()
    if os.geteuid() == 0 and login_user() != TEST_USER:
        pytest.skip(f"{TEST_USER} does not exist (scripts/setup-test.sh creates it as root)")

    async def main() -> None:
        backend = SshBackend(sshd_server.config(), LIMITS)
        try:
            info = await backend.host_info()
            assert info.user == sshd_server.user
            proc = await backend.start(SpawnRequest(("sh", "-c", "id -un"), "/tmp", dict(os.environ)))
            assert b"".join([c.data async for c in proc.output()]) == f"{info.user}\n".encode()
            await proc.terminate()
        finally:
            await backend.aclose()

    asyncio.run(main())
