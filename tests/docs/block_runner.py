"""Run one documented shell block as a user would, bounded, on loopback only.

The block runs in bash (`set -eo pipefail`) in a scratch directory, with a scratch HOME and
XDG_RUNTIME_DIR (so the generated local tokens and pid files are the block's own), and a
PATH whose `shellgate`, `shellgate-execserver`, `python`/`python3` are this checkout's and
whose `buf`/`codex` are the pinned ones of `.tools`. Servers the block names (`with`,
`background`) are waited for on the ports they name; everything it started — background
jobs, servers, a `shellgate serve --detach` router — is stopped when it ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.docs.doc_blocks import Block, logical_lines, ports_named
from tests.paths import REPO_ROOT

BLOCK_TIMEOUT_S = 240.0
SERVER_READY_S = 60.0
STOP_GRACE_S = 15.0
TOOLS = REPO_ROOT / ".tools" / "node_modules" / ".bin"
# Waits (in the block's bash) for each port to accept a connection; fails the block when
# the background command exits first or nothing listens in time.
_PRELUDE = """set -eo pipefail
__doc_wait() {  # PID PORT...: the background job PID listens on every PORT
  local pid=$1 port tries
  shift
  for port in "$@"; do
    tries=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
      tries=$((tries + 1))
      if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" || true
        echo "doc-test: the background command exited before 127.0.0.1:$port listened" >&2
        return 1
      fi
      if [ "$tries" -gt __TRIES__ ]; then
        echo "doc-test: nothing listens on 127.0.0.1:$port" >&2; return 1
      fi
      sleep 0.1
    done
  done
}
trap 'kill $(jobs -p) 2>/dev/null || true; wait || true' EXIT
""".replace("__TRIES__", str(int(SERVER_READY_S * 10)))


@dataclass(frozen=True)
class Outcome:
    """What a block did: its exit code and output, and what was left out."""

    returncode: int
    stdout: str
    stderr: str
    skipped_tools: tuple[str, ...]


def installed(tool: str, path: str) -> bool:
    """Whether `tool` is on `path`."""
    return shutil.which(tool, path=path) is not None


def block_environ(root: Path) -> dict[str, str]:
    """HOME, XDG_RUNTIME_DIR and PATH of the block's own (the rest: this environment)."""
    home, xdg, bin_dir = root / "home", root / "xdg", root / "bin"
    for folder in (home, xdg, bin_dir):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    wrappers = {"shellgate": "-m shellgate.router.cli.main",
                "shellgate-execserver": "-m shellgate.execserver.cli", "python": "",
                "python3": ""}  # fmt: skip
    for name, module in wrappers.items():
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" {module} "$@"\n')
        (bin_dir / name).chmod(0o755)
    for name in ("buf", "codex"):
        if (TOOLS / name).exists():
            (bin_dir / name).symlink_to(TOOLS / name)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "CODEX_HOME")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(xdg),
               PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")  # fmt: skip
    return env


def port_taken(port: int) -> bool:
    """Whether something on this machine already listens on 127.0.0.1:port."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def ports_of(block: Block) -> list[int]:
    """Every loopback port the block and its servers will listen on or call."""
    text = "\n".join([block.script, *block.directives.with_servers])
    return sorted({p for line in logical_lines(text) for p in ports_named(line)})


def _workdir(block: Block, root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    if block.directives.checkout:
        for entry in REPO_ROOT.iterdir():
            if not entry.name.startswith("."):
                (work / entry.name).symlink_to(entry)
    return work


def script_for(block: Block, path: str) -> tuple[str, tuple[str, ...]]:
    """The bash script run for the block, and the optional tools left out."""
    d = block.directives
    missing = tuple(t for t in d.optional if not installed(t, path))
    lines = [_PRELUDE]
    for tool in missing:
        lines.append(f'{tool}() {{ echo "doc-test: {tool} is not installed here: skipped" >&2; }}')
    for command, reason in d.stubs:
        lines.append(f'{command}() {{ echo "doc-test: {command} $* stubbed ({reason})" >&2; }}')
    lines.append(_backgrounded(block.script, d.background))
    return "\n".join(lines) + "\n", missing


def _backgrounded(script: str, prefixes: tuple[str, ...]) -> str:
    """The script with each command starting with a prefix sent to the background."""
    if not prefixes:
        return script
    out: list[str] = []
    source = script.splitlines()
    index = 0
    while index < len(source):
        line = source[index]
        if not line.lstrip().startswith(prefixes):
            out.append(line)
            index += 1
            continue
        command = [line]
        while command[-1].endswith("\\") and index + 1 < len(source):
            index += 1
            command.append(source[index])
        last = re.sub(r"\s+#.*$", "", command[-1])
        ports = ports_named(" ".join(command))
        assert ports, f"a background command names no loopback port to wait for: {command}"
        out += [*command[:-1], f"{last} &", "__doc_wait $! " + " ".join(map(str, ports))]
        index += 1
    return "\n".join(out) + "\n"


@contextlib.contextmanager
def servers(commands: tuple[str, ...], env: dict[str, str], cwd: Path) -> Iterator[None]:
    """The `with` servers, each in its own session, listening before the block starts."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for command in commands:
            started.append(subprocess.Popen(
                ["bash", "-c", f"exec {command}"], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            ))  # fmt: skip
            _wait_ports(ports_named(command), started[-1])
        yield
    finally:
        for proc in reversed(started):
            _stop_group(proc)


def _wait_ports(ports: list[int], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_READY_S
    for port in ports:
        while not port_taken(port):
            assert proc.poll() is None, f"the server exited ({proc.returncode}) before {port}"
            assert time.monotonic() < deadline, f"nothing listens on 127.0.0.1:{port}"
            time.sleep(0.1)


def _stop_group(proc: subprocess.Popen[Any]) -> None:
    """TERM the process group, wait its grace, then KILL it."""
    for signo in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signo)
        try:
            proc.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_detached_routers(env: dict[str, str], cwd: Path) -> None:
    """`shellgate stop` each router the block left running (its pid file is the block's)."""
    run_dir = Path(env["XDG_RUNTIME_DIR"]) / "shellgate"
    for pid_file in sorted(run_dir.glob("router-*.pid")):
        port = pid_file.stem.removeprefix("router-")
        subprocess.run(["shellgate", "stop", "--target", f"127.0.0.1:{port}"], env=env,
                       cwd=cwd, capture_output=True, timeout=60, check=False)  # fmt: skip


def run_block(block: Block, root: Path) -> Outcome:
    """Run the block to its end (bounded); its servers and leftovers stopped."""
    env = block_environ(root)
    work = _workdir(block, root)
    script, missing = script_for(block, env["PATH"])
    with servers(block.directives.with_servers, env, work):
        proc = subprocess.Popen(
            ["bash", "-c", script], env=env, cwd=work, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            stdout, stderr = proc.communicate()
            stderr += f"\ndoc-test: the block did not finish within {BLOCK_TIMEOUT_S:g} s"
        finally:
            _stop_group(proc)
            _stop_detached_routers(env, work)
    return Outcome(proc.returncode, stdout, stderr, missing)
