"""A private `shellgate serve` on 127.0.0.1:0 that lives and dies with `shellgate mcp`.

A child process, not an in-process router: the client package may not import the router
(the layering rule), and `shellgate serve` already does everything a router start needs
(environment scrubbing, sandbox checks, escape reaping, its local token).
"""

from __future__ import annotations

import ctypes
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1
_START_TIMEOUT_S = 60.0


def _die_with_parent() -> None:
    # Even a SIGKILLed `shellgate mcp` takes its router (and so its commands) along.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedRouter:
    """The child router; `target` once started."""

    def __init__(self, serve_args: Sequence[str], log_level: str) -> None:
        self._args = [
            sys.executable, "-m", "shellgate.router.cli.main", "serve",
            "--listen", "127.0.0.1:0", "--print-port", "--log-level", log_level, *serve_args,
        ]  # fmt: skip
        self._proc: subprocess.Popen[bytes] | None = None
        self.target = ""

    def start(self) -> None:
        """Start it and wait for its port (RuntimeError with the reason when it fails)."""
        # stderr is inherited: an MCP client shows a stdio server's stderr as its log.
        # setpriv sets the parent-death signal and execs the router: no preexec_fn, which
        # would fork this gRPC-loaded process for real (grpc/grpc#43055: grpcio's fork
        # handler can crash the child before its exec).
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            args = [setpriv, "--pdeathsig", "SIGTERM", "--", *self._args]
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        else:
            proc = subprocess.Popen(
                self._args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                preexec_fn=_die_with_parent,
            )  # fmt: skip
        self._proc = proc
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], _START_TIMEOUT_S)
        line = proc.stdout.readline().strip() if ready else b""
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"the embedded router did not start (exit {proc.returncode})")
        self.target = f"127.0.0.1:{int(line)}"

    def stop(self) -> None:
        """SIGTERM (the router ends its sessions) and wait; SIGKILL if it hangs."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
