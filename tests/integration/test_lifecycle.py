"""`shellgate serve --detach`, `status` and `stop` on real routers: the pid file beside the
token (0600, removed at exit), the fixed detached log, the process title, SIGTERM and — only
for a router that does not exit — SIGKILL; stale and foreign pid files never get a process
signalled."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import marked_pids
from tests.router_harness import router_subprocess
from tests.waiting import eventually

SHELLGATE = [sys.executable, "-m", "shellgate.router.cli.main"]
# No bubblewrap needed: these tests are about the process, not the sandbox.
SERVE = ["serve", "--listen", "127.0.0.1:0", "--sandbox", "danger-full-access",
         "--log-level", "WARNING"]  # fmt: skip


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime dir (XDG_RUNTIME_DIR/shellgate) the routers and commands share."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "shellgate"


def shellgate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the `shellgate` CLI of this checkout."""
    return subprocess.run([*SHELLGATE, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)  # fmt: skip


def printed(command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a `shellgate …` command line exactly as a banner printed it."""
    words = shlex.split(command)
    assert words[0] == "shellgate", command
    return shellgate(*words[1:], timeout=timeout)


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its reaper counts)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@dataclass
class Detached:
    """A router `serve --detach` started, and what its last banner line said."""

    pid: int
    port: int
    log: Path
    stop_command: str
    banner: str


@pytest.fixture
def detached(runtime: Path) -> Iterator[Detached]:
    """`shellgate serve --detach` on a free port; SIGKILLed afterwards if a test left it."""
    done = shellgate(*SERVE, "--detach")
    assert done.returncode == 0, done.stderr
    line = re.search(
        r"detached: pid (\d+), log (\S+) \(stop it: (shellgate stop[^)]*)\)", done.stderr
    )
    port = re.search(r"router listening on 127\.0\.0\.1:(\d+)", done.stderr)
    assert line is not None and port is not None, done.stderr
    router = Detached(int(line[1]), int(port[1]), Path(line[2]), line[3], done.stderr)
    try:
        yield router
    finally:
        if not gone(router.pid):
            os.kill(router.pid, signal.SIGCONT)
            os.kill(router.pid, signal.SIGKILL)
            with contextlib.suppress(AssertionError):
                eventually(lambda: gone(router.pid), "the killed router gone", 30)


def test_detached_router_status_and_stop(
    runtime: Path, detached: Detached, orphan_sweep: str
) -> None:
    pid, port = detached.pid, detached.port
    target = f"127.0.0.1:{port}"
    # The fixed, documented log path, named in the banner, holding the banner.
    assert detached.log == runtime / f"router-{port}.log"
    assert f"router listening on {target}" in detached.log.read_text()
    assert detached.stop_command == f"shellgate stop --target {target}"
    # The pid file beside the token file, this user's only.
    pid_file = runtime / f"router-{port}.pid"
    assert oct(pid_file.stat().st_mode & 0o777) == "0o600"
    record = json.loads(pid_file.read_text())
    assert (record["pid"], record["listen"], record["log"]) == (pid, target, str(detached.log))
    assert (runtime / f"router-{port}.token").exists()
    # A title ps shows; the environment block is untouched (the orphan sweep still sees it).
    assert Path(f"/proc/{pid}/comm").read_text() == "shellgate serve\n"
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
    assert cmdline == f"shellgate serve {target}".encode()
    assert pid in marked_pids(orphan_sweep)

    status = shellgate("status", "--target", target)
    assert status.returncode == 0, status
    assert status.stdout == f"shellgate router running on {target}: pid {pid}, log {detached.log}\n"

    stop = printed(detached.stop_command)
    assert stop.returncode == 0, stop
    assert stop.stdout == f"shellgate stop: router on {target} (pid {pid}) stopped\n"
    assert gone(pid)  # stop returns once the process has exited
    assert not pid_file.exists() and not (runtime / f"router-{port}.token").exists()
    assert detached.log.exists()  # the log stays for reading

    status = shellgate("status", "--target", target)
    assert status.returncode == 3
    assert status.stdout == f"shellgate router for {target}: not running (no pid file {pid_file})\n"
    again = shellgate("stop", "--target", target)
    assert again.returncode == 0 and "no router running" in again.stdout


def test_a_router_that_does_not_exit_is_killed_after_the_timeout(
    runtime: Path, detached: Detached
) -> None:
    target = f"127.0.0.1:{detached.port}"
    # A stopped process leaves SIGTERM pending: a router that cannot drain, for real.
    os.kill(detached.pid, signal.SIGSTOP)
    stop = shellgate("stop", "--target", target, "--timeout", "1")
    assert stop.returncode == 0, stop
    assert f"router on {target} (pid {detached.pid}) still running 1 s after SIGTERM" in stop.stderr
    assert (
        stop.stdout == f"shellgate stop: router on {target} (pid {detached.pid}) killed (SIGKILL)\n"
    )
    assert gone(detached.pid)
    # It could not remove its own files: stop did.
    assert not (runtime / f"router-{detached.port}.pid").exists()
    assert not (runtime / f"router-{detached.port}.token").exists()


def test_a_killed_routers_pid_file_is_stale(runtime: Path, detached: Detached) -> None:
    target = f"127.0.0.1:{detached.port}"
    pid_file = runtime / f"router-{detached.port}.pid"
    os.kill(detached.pid, signal.SIGKILL)
    eventually(lambda: gone(detached.pid), "the killed router gone", 30)
    assert pid_file.exists()
    status = shellgate("status", "--target", target)
    assert status.returncode == 3
    assert status.stdout == (f"shellgate router for {target}: not running (stale pid file "
                             f"{pid_file} removed: pid {detached.pid} has exited)\n")  # fmt: skip
    assert not pid_file.exists()


def _forge(pid_file: Path, **changes: object) -> None:
    record = json.loads(pid_file.read_text())
    pid_file.write_text(json.dumps({**record, **changes}))


def test_a_pid_file_naming_another_process_gets_nothing_signalled(
    runtime: Path, detached: Detached
) -> None:
    target = f"127.0.0.1:{detached.port}"
    pid_file = runtime / f"router-{detached.port}.pid"
    record = json.loads(pid_file.read_text())
    # A reused pid: some other process of this user, with its real start time.
    other = subprocess.Popen(["sleep", "60"])
    try:
        from shellgate.router.cli.pidfile import process_start

        _forge(pid_file, pid=other.pid, started=process_start(other.pid))
        stop = shellgate("stop", "--target", target)
        assert stop.returncode == 0, stop
        assert f"removed: pid {other.pid} is not a shellgate router" in stop.stdout
        assert other.poll() is None and not pid_file.exists()
    finally:
        other.kill()
        other.wait()
    # The router's own pid but another start time: a process that merely reuses the pid.
    pid_file.write_text(json.dumps({**record, "started": record["started"] + 1}))
    stop = shellgate("stop", "--target", target)
    assert f"removed: pid {detached.pid} is now another process" in stop.stdout
    assert not gone(detached.pid)


def test_a_pid_file_others_could_write_is_not_trusted(runtime: Path, detached: Detached) -> None:
    target = f"127.0.0.1:{detached.port}"
    pid_file = runtime / f"router-{detached.port}.pid"
    pid_file.chmod(0o622)
    stop = shellgate("stop", "--target", target)
    assert stop.returncode == 1
    assert (
        stop.stderr
        == f"shellgate stop: not signalling anything: {pid_file} is writable by others (mode 0622)\n"
    )
    assert shellgate("status", "--target", target).returncode == 4
    if os.getuid() == 0:
        pid_file.chmod(0o600)
        os.chown(pid_file, 65534, 65534)  # nobody's file
        stop = shellgate("stop", "--target", target)
        assert stop.returncode == 1 and "not a regular file owned by this user" in stop.stderr
    assert not gone(detached.pid)


def test_a_foreground_router_has_a_pid_file_too(runtime: Path) -> None:
    with router_subprocess(SERVE[3:]) as (proc, port):
        target = f"127.0.0.1:{port}"
        status = shellgate("status", "--target", target)
        assert status.stdout == (f"shellgate router running on {target}: pid {proc.pid}, log none "
                                 "(not detached: its stderr)\n")  # fmt: skip
        stop = shellgate("stop", "--target", target)
        assert stop.returncode == 0, stop
        assert proc.wait(timeout=10) == 0
    assert not (runtime / f"router-{port}.pid").exists()
