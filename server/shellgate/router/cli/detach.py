"""`shellgate serve --detach`: start the router in the background and return once it listens.

The quick start chains `shellgate serve --detach && shellgate call …`: the call runs only
once the router answers, and a router that cannot start fails the chain at once with its
own one-line reason instead of leaving the call to time out against nothing.

The child logs to a temporary file in the runtime dir and, once it listens, renames it to
the fixed `<runtime dir>/router-PORT.log` (`run_files.py`) before printing its port, so
the line printed here names the file that stays.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from shellgate.common.local_token import runtime_dir
from shellgate.router.cli.pidfile import Running, find_router, log_path
from shellgate.router.service.config import DEFAULT_LISTEN

# Start-up loads rules and probes the sandbox; well under this on any machine we know.
_READY_TIMEOUT_S = 60.0


def _log_file() -> Path:
    folder = runtime_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="router-", suffix=".log", dir=folder)
    os.close(fd)
    return Path(name)


def _first_line(child: subprocess.Popen[bytes], deadline: float) -> bytes:
    """The child's first stdout line (its port), or b"" once it exits or the deadline passes."""
    assert child.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(child.stdout, selectors.EVENT_READ)
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                return b""
            chunk = os.read(child.stdout.fileno(), 64)
            if not chunk:
                return b""
            line += chunk
        return line


def detach(serve_argv: Sequence[str]) -> int:
    """Run `shellgate serve SERVE_ARGV --print-port` detached; its exit code if it fails."""
    log = _log_file()
    argv = [sys.executable, "-m", "shellgate.router.cli.main", "serve", *serve_argv, "--print-port",
            "--detached-log", str(log)]  # fmt: skip
    with log.open("ab") as log_out:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_out,
            start_new_session=True,  # the terminal's hangup does not reach it
        )  # fmt: skip
    try:
        port = (
            _first_line(child, time.monotonic() + _READY_TIMEOUT_S).strip().decode(errors="replace")
        )
    finally:
        assert child.stdout is not None
        child.stdout.close()
    if port.isdigit() and log_path(int(port)).exists():
        log = log_path(int(port))  # renamed by the child before it printed the port
    said = log.read_text(encoding="utf-8", errors="replace")
    if not port:
        # Its own message (one line for every start-up refusal) is the whole answer.
        sys.stderr.write(said)
        try:
            code = child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            print(f"shellgate serve: not listening after {_READY_TIMEOUT_S:.0f} s; log: {log}",
                  file=sys.stderr)  # fmt: skip
            return 1
        log.unlink(missing_ok=True)
        return code or 1
    sys.stderr.write(said)
    stop = _stop_command(int(port))
    print(f"  detached: pid {child.pid}, log {log} (stop it: {stop})", file=sys.stderr, flush=True)
    return 0


def _stop_command(port: int) -> str:
    """`shellgate stop`, with --target unless the router is on the default address."""
    found = find_router(port)
    address = found.record.listen if isinstance(found, Running) else f"127.0.0.1:{port}"
    return "shellgate stop" if address == DEFAULT_LISTEN else f"shellgate stop --target {address}"
