"""`shellgate serve --detach`: start the router in the background and return once it listens.

The quick start chains `shellgate serve --detach && shellgate call …`: the call runs only
once the router answers, and a router that cannot start fails the chain at once with its
own one-line reason instead of leaving the call to time out against nothing.
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
    argv = [sys.executable, "-m", "shellgate.router.cli.main", "serve", *serve_argv, "--print-port"]
    with log.open("ab") as log_out:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_out,
            start_new_session=True,  # the terminal's hangup does not reach it
        )  # fmt: skip
    try:
        port = _first_line(child, time.monotonic() + _READY_TIMEOUT_S).strip()
    finally:
        assert child.stdout is not None
        child.stdout.close()
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
    print(f"  detached: pid {child.pid}, log {log} (stop it: kill {child.pid})",
          file=sys.stderr, flush=True)  # fmt: skip
    return 0
