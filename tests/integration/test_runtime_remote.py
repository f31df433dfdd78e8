"""The runtime against a real exec-server daemon (remote environment, spec 06 §5)."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.common.errors import NotATtyError, ProcessExitedError, StdinClosedError
from shellgate.common.process.base import Signal, SpawnRequest
from shellgate.common.sandbox import SandboxSpec
from shellgate.router.apply_patch.fs import PatchIoError
from shellgate.router.handler.environments import ReportedShell, TurnEnvironment
from shellgate.router.runtime.call.events import Termination
from shellgate.router.runtime.environments.remote.config import DialSettings
from shellgate.router.runtime.environments.remote.environment import RemoteConfig, RemoteEnvironment

from tests.integration.runtime_support import Harness, completed, normalise

try:
    import shellgate.execserver.cli  # noqa: F401

    HAVE_DAEMON = True
except ImportError:  # pragma: no cover - the daemon lands separately
    HAVE_DAEMON = False

pytestmark = pytest.mark.skipif(not HAVE_DAEMON, reason="exec-server daemon not available")
FAST_DIAL = DialSettings(connect_timeout_ms=2_000, call_timeout_ms=5_000)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """An insecure loopback daemon as a subprocess; yields (process, port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellgate.execserver.cli", "serve", "--listen",
         "127.0.0.1:0", "--print-port", "--insecure", "--root", str(tmp_path),
         "--log-level", "WARNING"],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        yield proc, int(line)
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _remote_harness(tmp_path: Path, port: int, env_id: str = "box") -> Harness:
    remote = RemoteEnvironment(
        RemoteConfig(env_id, f"127.0.0.1:{port}", dial=FAST_DIAL),
        client_env=dict(os.environ),
    )  # fmt: skip
    turn_env = TurnEnvironment(
        env_id, str(tmp_path), remote=True, shell=ReportedShell("bash", "/bin/bash")
    )
    return Harness(tmp_path, extra_envs=[remote], turn_envs=[turn_env])


def test_remote_exec_command_and_session(tmp_path: Path, daemon: tuple[object, int]) -> None:
    async def main() -> None:
        async with _remote_harness(tmp_path, daemon[1]) as h:
            done = completed(await h.run("exec_command", {"cmd": "echo hi; pwd"}))
            assert normalise(done.output_text) == (
                "Chunk ID: XXXXXX\nWall time: W seconds\nProcess exited with code 0\n"
                f"Original token count: {-(-(3 + len(str(tmp_path)) + 1) // 4)}\n"
                f"Output:\nhi\n{tmp_path}\n"
            )
            done = completed(await h.run("exec_command",
                                         {"cmd": "cat", "tty": True, "yield_time_ms": 300},
                                         "c2"))  # fmt: skip
            assert done.session_id == 1000
            done = completed(await h.run(
                "write_stdin", {"session_id": 1000, "chars": "ping\n", "yield_time_ms": 1500},
                "c3"))  # fmt: skip
            assert done.output_text.endswith("Output:\nping\r\nping\r\n")
            done = completed(
                await h.run("write_stdin", {"session_id": 1000, "chars": "\u0004"}, "c4")
            )
            assert "Process exited with code 0\n" in done.output_text
            status = await h.registry.statuses()
            assert [(s.environment_id, s.reachable) for s in status] == [
                ("local", True), ("box", True)
            ]

    asyncio.run(main())


def test_remote_apply_patch_uses_daemon_files(
    tmp_path: Path, daemon: tuple[object, int]
) -> None:
    async def main() -> None:
        async with _remote_harness(tmp_path, daemon[1]) as h:
            patch = "*** Begin Patch\n*** Add File: sub/r.txt\n+remote\n*** End Patch\n"
            done = completed(await h.run("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"}))
            assert done.output_text == (
                "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\n"
                "Output:\nSuccess. Updated the following files:\nA sub/r.txt\n"
            )
            assert (tmp_path / "sub" / "r.txt").read_text() == "remote\n"

    asyncio.run(main())


def test_remote_lost_and_unavailable(
    tmp_path: Path, daemon: tuple[subprocess.Popen[str], int]
) -> None:
    proc, port = daemon

    async def main() -> None:
        async with _remote_harness(tmp_path, port) as h:
            done = completed(await h.run(
                "exec_command", {"cmd": "echo before; sleep 30", "yield_time_ms": 500}))
            sid = done.session_id
            assert sid is not None
            os.killpg(proc.pid, signal.SIGKILL)
            done = completed(
                await h.run("write_stdin", {"session_id": sid, "yield_time_ms": 5000}, "c2")
            )
            assert "Process exited with code -1\n" in done.output_text
            assert "\n[environment `box` was lost: " in done.output_text
            assert done.termination is Termination.ENVIRONMENT_LOST
            again = completed(await h.run("write_stdin", {"session_id": sid}, "c3"))
            assert again.output_text == (
                "write_stdin failed: Unified exec process failed: environment `box` was lost"
            )
            done = completed(await h.run("exec_command", {"cmd": "true"}, "c4"))
            assert done.output_text.startswith(
                'exec_command failed: CreateProcess { message: "Rejected(\\"environment `box` '
                "is unavailable: "
            )
            assert done.termination is Termination.ENVIRONMENT_LOST
            status = {s.environment_id: s for s in await h.registry.statuses()}
            assert not status["box"].reachable and status["box"].last_error

    asyncio.run(main())


def test_remote_errors_keep_their_class_and_errno(
    tmp_path: Path, daemon: tuple[object, int]
) -> None:
    # The daemon's reason (and errno) pick the error, not words in its message.
    async def main() -> None:
        env = RemoteEnvironment(
            RemoteConfig("box", f"127.0.0.1:{daemon[1]}", dial=FAST_DIAL),
            client_env=dict(os.environ),
        )  # fmt: skip
        try:
            request = SpawnRequest(argv=("sleep", "30"), cwd=str(tmp_path))
            spawned = await env.spawn(request, SandboxSpec(), detach=False, owner="t")
            handle = spawned.handle
            with pytest.raises(NotATtyError, match=r"^process has no tty$"):
                await handle.resize(30, 100)
            with pytest.raises(StdinClosedError, match=r"^stdin is not open$"):
                await handle.write(b"x")
            await handle.terminate()
            with pytest.raises(ProcessExitedError):
                await handle.signal(Signal.INTERRUPT)
            files = env.filesystem()
            with pytest.raises(PatchIoError) as err:
                await asyncio.to_thread(files.read_text, str(tmp_path / "missing.txt"))
            assert (err.value.message, err.value.errno) == (
                "No such file or directory (os error 2)", errno.ENOENT)  # fmt: skip
        finally:
            await env.aclose()

    asyncio.run(main())
