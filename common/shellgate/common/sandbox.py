"""Bubblewrap sandbox on the daemon's host: read-only / workspace-write, network off."""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from shellgate.common.errors import SandboxUnavailableError

NETWORK_DISABLED_ENV = "CODEX_SANDBOX_NETWORK_DISABLED"
# Case-insensitive substrings that make a failed sandboxed run a denial (spec 05 §1.3).
DENIAL_MARKERS = (
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
    "failed to write file",
)
_SIGSYS = 31


class SandboxMode(enum.Enum):
    """Filesystem restriction requested for a process."""

    NONE = "none"
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"


@dataclass(frozen=True)
class SandboxSpec:
    """A sandbox to apply: mode, writable roots (workspace-write only), network."""

    mode: SandboxMode = SandboxMode.NONE
    writable_roots: tuple[str, ...] = ()
    network_access: bool = False


@lru_cache(maxsize=1)
def sandbox_unavailable_reason() -> str:
    """Empty when bubblewrap works here; otherwise why not (probed once)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap not found"
    try:
        probe = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed: {exc}"
    if probe.returncode != 0:
        return "bwrap failed: " + probe.stderr.decode(errors="replace").strip()[:200]
    return ""


def bwrap_argv(
    bwrap: str, argv: tuple[str, ...], cwd: str, spec: SandboxSpec
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The bubblewrap launch argv (for whichever host runs it) and the env additions."""
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if spec.mode is SandboxMode.WORKSPACE_WRITE:
        for root in spec.writable_roots:
            if not os.path.isabs(root):
                raise SandboxUnavailableError(f"writable root must be absolute: {root}")
            # --bind-try: a root missing on the host that runs it is skipped, not an error
            # (the check happens there, not on the daemon's filesystem).
            args += ["--bind-try", root, root]
    extra: dict[str, str] = {}
    if not spec.network_access:
        args.append("--unshare-net")
        extra[NETWORK_DISABLED_ENV] = "1"
    # bwrap dies with its parent, so the group kill and parent-death rules still hold.
    args += ["--die-with-parent", "--chdir", cwd, "--", *argv]
    return tuple(args), extra


def wrap_argv(
    argv: tuple[str, ...],
    cwd: str,
    spec: SandboxSpec,
    *,
    bwrap: str | None = None,
    unavailable_reason: str | None = None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The launch argv under bubblewrap and the env additions; refuses when unavailable.

    Without `bwrap`/`unavailable_reason` this host is probed; a backend that runs
    elsewhere (SSH) passes what it found on its own host.
    """
    if spec.mode is SandboxMode.NONE:
        return argv, {}
    reason = sandbox_unavailable_reason() if unavailable_reason is None else unavailable_reason
    if reason or (bwrap is None and unavailable_reason is not None):
        # Never run a sandboxed request unsandboxed.
        raise SandboxUnavailableError(f"sandbox unavailable: {reason or 'bwrap not found'}")
    path = bwrap or shutil.which("bwrap") or "bwrap"
    return bwrap_argv(path, argv, cwd, spec)


def is_sandbox_denied(
    exit_code: int, signal: int | None, outputs: Mapping[str, str], sandboxed: bool
) -> bool:
    """The spec's sandbox-denial heuristic over stdout/stderr/aggregate text."""
    if not sandboxed or (exit_code == 0 and signal is None):
        return False
    for text in outputs.values():
        lowered = text.lower()
        if any(marker in lowered for marker in DENIAL_MARKERS):
            return True
    if exit_code in (2, 126, 127):
        return False
    return signal == _SIGSYS
