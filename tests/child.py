"""Stopping a daemon the tests started: SIGTERM, a grace period, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop_child(proc: subprocess.Popen[Any], grace_s: float = 15.0) -> None:
    """SIGTERM `proc` if it runs, wait up to `grace_s`, SIGKILL past it; always reaped."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
