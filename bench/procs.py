"""Peer servers as owned subprocesses: start, read where they listen, measure, stop."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# How long a peer may take to print where it listens (codex and uvicorn import a lot).
STARTUP_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0


@dataclass
class Server:
    """A running peer: its process (leader of its own group) and its address."""

    proc: subprocess.Popen[bytes]
    address: str
    log: str = ""

    @property
    def pid(self) -> int:
        """The server's own pid."""
        return self.proc.pid


def free_port() -> int:
    """A loopback port that was free a moment ago (for servers that cannot bind :0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(home: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal child environment: PATH, a throwaway HOME, C locale (+ test marker)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LANG": "C.UTF-8"}
    # Keep the test suite's orphan marker so its sweep can see every child we start.
    if "SHELLGATE_TEST_MARK" in os.environ:
        env["SHELLGATE_TEST_MARK"] = os.environ["SHELLGATE_TEST_MARK"]
    env.update(extra or {})
    return env


def _cpu_prefix(cpu: int | None) -> list[str]:
    # Pinning the server to one CPU makes "on one core" literal and keeps the client off it.
    if cpu is None or shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return []
    return ["taskset", "-c", str(cpu)]


@contextlib.contextmanager
def serve(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    parse: str = "port",
    cpu: int | None = None,
    cwd: str | None = None,
) -> Iterator[Server]:
    """Start argv in its own process group; the first stdout line is its port or URL.

    parse="port" expects a bare port number, parse="url" a URL. The group gets SIGTERM on
    exit, then SIGKILL after a grace period, so no child outlives the bench.
    """
    # stderr goes to a log file (a full, unread pipe would stall a chatty server).
    log = tempfile.NamedTemporaryFile(prefix="sg-bench-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        [*_cpu_prefix(cpu), *argv], stdout=subprocess.PIPE, stderr=log,
        stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True,
    )  # fmt: skip
    log.close()
    try:
        assert proc.stdout is not None
        line = b""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline and not line.strip():
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
        text = line.decode().strip()
        if (parse == "port" and not text.isdigit()) or not text:
            tail = Path(log.name).read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{argv[0]} did not print where it listens: {text!r} {tail}")
        address = f"127.0.0.1:{text}" if parse == "port" else text
        # Keep draining stdout so the server never blocks on it.
        threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
        yield Server(proc, address, log.name)
    finally:
        stop(proc)
        if os.environ.get("SG_BENCH_KEEP_LOGS") != "1":
            with contextlib.suppress(OSError):
                os.unlink(log.name)


def _drain(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        while stream.read(65536):
            pass


def stop(proc: subprocess.Popen[bytes]) -> None:
    """TERM the process group, wait, KILL it if needed, and close the pipes."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    # Children of the server share its group; KILL whatever is left of it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    if proc.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            proc.stdout.close()


def wait_http(port: int, path: str, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Poll until GET path on the loopback port answers (servers that print nothing)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            if s.recv(64).startswith(b"HTTP/1."):
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing answered on 127.0.0.1:{port}{path}")


def rss_kib(pid: int) -> int:
    """Resident set size of a process, KiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _tids(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


@contextlib.contextmanager
def pinned(pid: int, cpu: int) -> Iterator[None]:
    """Pin every thread of a running server to one CPU for the block, then restore.

    Affinity is per thread and children inherit it, so a server pinned at launch would
    also confine the commands it runs (and its helpers) to that CPU; pinning only while a
    one-core figure is measured keeps the end-to-end benches like with like.
    """
    if (os.cpu_count() or 1) < 2:
        yield
        return
    before = {tid: os.sched_getaffinity(tid) for tid in _tids(pid)}
    for tid in before:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, {cpu})
    try:
        yield
    finally:
        every = os.sched_getaffinity(0) | set().union(*before.values())
        # Threads started meanwhile inherited the pin: release them too.
        for tid in _tids(pid):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, before.get(tid, every))


def server_pid(server: Server) -> int:
    """The pid doing the work (taskset execs in place, so it is the same pid)."""
    return server.pid


def python() -> str:
    """This interpreter, for peers that are Python modules."""
    return sys.executable


@contextlib.contextmanager
def scratch_home() -> Iterator[str]:
    """A throwaway HOME (clean: no rc files, no config) under the system temp dir."""
    path = tempfile.mkdtemp(prefix="sg-bench-home-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# The folders of a checkout that hold shellgate's packages (the editable install's paths).
PACKAGE_DIRS = ("server", "common", "execserver", "protos", "client", "mcp")


def tree_pythonpath(tree: Path) -> str:
    """PYTHONPATH that makes `python -m shellgate…` import another checkout's packages: its
    folders come before the installed ones (site .pth entries follow PYTHONPATH)."""
    return os.pathsep.join(str(tree / d) for d in PACKAGE_DIRS)
