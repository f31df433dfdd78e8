"""GetInfo facts about the host: native shell, cwd, platform, user, capabilities."""

from __future__ import annotations

import contextlib
import os
import platform
import pwd
import shutil
import socket
import sys
from dataclasses import dataclass

from shellgate.common.sandbox import sandbox_unavailable_reason

VERSION = "0.1.0"
# Exact-allowlist shell names a daemon may report.
_SHELL_NAMES = {"bash": "bash", "zsh": "zsh", "sh": "sh", "pwsh": "powershell",
                "powershell": "powershell", "cmd": "cmd", "cmd.exe": "cmd"}


@dataclass(frozen=True)
class ShellFacts:
    """A native shell: name (bash/zsh/sh/powershell/cmd) and absolute path."""

    name: str
    path: str


@dataclass(frozen=True)
class HostInfo:
    """Everything GetInfo reports except limits and the caller."""

    shell: ShellFacts | None
    cwd: str
    os: str
    arch: str
    hostname: str
    user: str
    home: str
    backend: str
    pty: bool
    signals: bool
    sandbox: bool
    sandbox_unavailable_reason: str
    version: str = VERSION
    # Absolute path of bubblewrap on the host that runs processes; empty when unavailable.
    bwrap_path: str = ""


def shell_from_path(path: str) -> ShellFacts | None:
    """A ShellFacts for an absolute shell path whose basename is on the allowlist."""
    name = _SHELL_NAMES.get(os.path.basename(path))
    if name is None or not os.path.isabs(path):
        return None
    return ShellFacts(name, path)


def native_shell() -> ShellFacts | None:
    """The service user's login shell, else bash, else sh (None when nothing fits)."""
    candidates: list[str] = []
    with contextlib.suppress(KeyError):
        candidates.append(pwd.getpwuid(os.getuid()).pw_shell)
    for fallback in ("bash", "sh"):
        found = shutil.which(fallback)
        if found:
            candidates.append(found)
    for path in candidates:
        facts = shell_from_path(path)
        if facts is not None and os.access(path, os.X_OK):
            return facts
    return None


def local_host_info(root: str) -> HostInfo:
    """Facts about this host for the local backend."""
    try:
        entry = pwd.getpwuid(os.getuid())
        user, home = entry.pw_name, entry.pw_dir
    except KeyError:
        user, home = str(os.getuid()), os.environ.get("HOME", "/")
    reason = sandbox_unavailable_reason()
    return HostInfo(
        shell=native_shell(),
        cwd=root or os.getcwd(),
        os=sys.platform,
        arch=platform.machine(),
        hostname=socket.gethostname(),
        user=user,
        home=home,
        backend="local",
        pty=True,
        signals=True,
        sandbox=not reason,
        sandbox_unavailable_reason=reason,
        bwrap_path="" if reason else shutil.which("bwrap") or "",
    )
