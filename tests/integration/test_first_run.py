"""The README's run command on a machine without bubblewrap (hidden from PATH) and with it.

The command is read from the README's first code block, so changing the README changes what
runs here. `pip install .` is replaced by a no-op `pip` (the package is already importable
from this checkout) and `apt-get`/`sudo` are hidden too, so nothing installs bubblewrap: the
command must fail at once with one line naming what to install or which flag to pass, never
a per-call `CreateProcess` text; with the flag that line names, it must work.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.waiting import eventually

# Hidden from the PATH the command sees: the sandbox, whatever could install it, and the
# installed entry points (shims that run this checkout take their place).
HIDDEN = {"bwrap", "apt-get", "sudo", "pip", "pip3", "shellgate", "shellgate-execserver"}
SOURCE_DIRS = ("server", "execserver", "common", "client", "protos")
RUN_TIMEOUT_S = 90


def readme_run_command() -> str:
    """The first fenced `sh` block of the README: the quick start's run command."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None, "README has no ```sh block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, f"the run command is one line: {lines}"
    return lines[0]


def _bin_dir(tmp_path: Path, *, with_bwrap: bool) -> Path:
    """A PATH directory holding links to every program on PATH but the hidden ones."""
    farm = tmp_path / "bin"
    farm.mkdir()
    hidden = HIDDEN - ({"bwrap"} if with_bwrap else set())
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = farm / entry.name
            if entry.name not in hidden and not link.exists() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    (farm / "pip").write_text("#!/bin/sh\nexit 0\n")
    for name, module in (
        ("shellgate", "shellgate.router.cli.main"),
        ("shellgate-execserver", "shellgate.execserver.cli"),
    ):
        (farm / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
    for shim in ("pip", "shellgate", "shellgate-execserver"):
        (farm / shim).chmod(0o755)
    return farm


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _on_a_free_port(command: str) -> tuple[str, str]:
    """The command with the router on a free loopback port (others' tests use 50051)."""
    target = f"127.0.0.1:{_free_port()}"
    assert "shellgate serve --detach" in command and "shellgate call" in command, command
    command = command.replace("shellgate serve --detach", f"shellgate serve --detach --listen {target}")
    return command.replace("shellgate call", f"shellgate call --target {target}"), target


@pytest.fixture
def detached() -> Iterator[list[int]]:
    """Pids of routers the command left running; each is stopped (and awaited) afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        with contextlib.suppress(AssertionError):  # as before: 20 s, then move on
            eventually(lambda: _exited(pid), f"router {pid} stopped", 20)  # noqa: B023


def _exited(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # A zombie has exited; its parent (init or a subreaper) reaps it.
    return stat.split(") ", 1)[-1].startswith("Z")


def _run(command: str, tmp_path: Path, *, with_bwrap: bool) -> subprocess.CompletedProcess[str]:
    farm = _bin_dir(tmp_path, with_bwrap=with_bwrap)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    pythonpath = os.pathsep.join(str(REPO_ROOT / d) for d in SOURCE_DIRS)
    env = {
        **os.environ, "PATH": str(farm), "XDG_RUNTIME_DIR": str(runtime),
        "PYTHONPATH": pythonpath + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }  # fmt: skip
    return subprocess.run(
        ["sh", "-c", command], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _remember_pid(done: subprocess.CompletedProcess[str], pids: list[int]) -> None:
    found = re.search(r"detached: pid (\d+)", done.stderr)
    if found is not None:
        pids.append(int(found.group(1)))


def test_without_bubblewrap_it_fails_at_once_with_one_line(
    tmp_path: Path, detached: list[int]
) -> None:
    command, _ = _on_a_free_port(readme_run_command())
    started = time.monotonic()
    done = _run(command, tmp_path, with_bwrap=False)
    _remember_pid(done, detached)
    elapsed = time.monotonic() - started
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.strip()
    assert line.startswith("shellgate serve: the default permission profile workspace-write")
    assert "bwrap not found" in line and "install bubblewrap" in line
    assert "--sandbox danger-full-access" in line
    assert "CreateProcess" not in done.stderr and "Traceback" not in done.stderr
    # At once: no per-call timeout, no waiting for a router that will never listen.
    assert elapsed < 30


def test_without_bubblewrap_the_flag_the_line_names_works(
    tmp_path: Path, detached: list[int]
) -> None:
    command, _ = _on_a_free_port(readme_run_command())
    command = command.replace("--detach", "--detach --sandbox danger-full-access", 1)
    done = _run(command, tmp_path, with_bwrap=False)
    _remember_pid(done, detached)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.strip().splitlines()[-1] == "hello"
    assert "sandbox: default permission profile danger-full-access" in done.stderr


def test_with_bubblewrap_it_works_and_the_banner_names_the_sandbox(
    tmp_path: Path, detached: list[int]
) -> None:
    from shellgate.common.sandbox import sandbox_unavailable_reason

    if sandbox_unavailable_reason():
        pytest.skip(f"bubblewrap cannot run here: {sandbox_unavailable_reason()}")
    command, target = _on_a_free_port(readme_run_command())
    done = _run(command, tmp_path, with_bwrap=True)
    _remember_pid(done, detached)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.strip().splitlines()[-1] == "hello"
    banner = done.stderr
    assert f"router listening on {target}" in banner
    assert "environments: local (embedded" in banner
    assert "sandbox: default permission profile workspace-write; local sandbox: bubblewrap (" in banner
    assert "rules: none" in banner
    assert f'try: shellgate call --target {target} --cmd "echo hello"' in banner
