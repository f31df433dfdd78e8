"""A private `shellgate serve` on 127.0.0.1:0 that lives and dies with `shellgate mcp`.

A child process, not an in-process router: the MCP front may not import the router
(the layering rule), and `shellgate serve` already does everything a router start needs
(environment scrubbing, sandbox checks, escape reaping, its local token). Its sandboxes
mask what this process holds secrets in (`--masked-path`), beside the router's own.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence

_START_TIMEOUT_S = 60.0

# Where setpriv is missing: a fresh interpreter (no grpc loaded, so this gRPC-loaded
# process is never forked for real) sets the parent-death signal (PR_SET_PDEATHSIG = 1),
# gives up if its parent already died (the signal would never come), then execs argv.
_TRAMPOLINE = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def dying_with_parent(argv: Sequence[str], setpriv: str | None) -> list[str]:
    """argv wrapped so that the child gets SIGTERM when this process dies, even SIGKILLed.

    Exec'd, never `preexec_fn`: that forks this gRPC-loaded process for real, and grpcio's
    fork handler can crash the child before its exec (grpc/grpc#43055).
    """
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "SIGTERM", "--", *argv]
    return [sys.executable, "-c", _TRAMPOLINE, str(os.getpid()), *argv]


def masked_path_args(*paths: str | None) -> list[str]:
    """`serve --masked-path` arguments: files of this process's secrets (absolute paths)."""
    out: list[str] = []
    for path in paths:
        if path:
            out += ["--masked-path", os.path.abspath(path)]
    return out


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
        # stderr is inherited: an MCP client shows a stdio server's stderr as its log. Even
        # a SIGKILLed `shellgate mcp` takes its router (and so its commands) along.
        args = dying_with_parent(self._args, shutil.which("setpriv"))
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
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
