"""Shell types: exact-allowlist detection and `derive_exec_args` (spec 02 §5)."""

from __future__ import annotations

import enum
from collections.abc import Sequence


class ShellType(enum.StrEnum):
    """The shell kinds the router knows."""

    BASH = "bash"
    ZSH = "zsh"
    SH = "sh"
    POWERSHELL = "powershell"
    CMD = "cmd"


# Exact strings only: a repo-local file named like a shell must never get wrapper trust.
_EXACT: dict[str, ShellType] = {
    **dict.fromkeys(
        ("zsh", "/bin/zsh", "/usr/bin/zsh", "/usr/local/bin/zsh", "/opt/homebrew/bin/zsh"),
        ShellType.ZSH,
    ),
    **dict.fromkeys(("sh", "/bin/sh", "/usr/bin/sh"), ShellType.SH),
    **dict.fromkeys(
        ("bash", "/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"),
        ShellType.BASH,
    ),
    **dict.fromkeys(
        (
            "pwsh",
            "powershell",
            "pwsh.exe",
            "powershell.exe",
            "/usr/local/bin/pwsh",
            "/usr/bin/pwsh",
            "/bin/pwsh",
            "/opt/homebrew/bin/pwsh",
        ),
        ShellType.POWERSHELL,
    ),
    **dict.fromkeys(("cmd", "cmd.exe"), ShellType.CMD),
}

_WINDOWS_NORMALISED: dict[str, ShellType] = {
    "c:/windows/system32/cmd.exe": ShellType.CMD,
    "c:/windows/system32/windowspowershell/v1.0/powershell.exe": ShellType.POWERSHELL,
    "c:/program files/powershell/7/pwsh.exe": ShellType.POWERSHELL,
}

POSIX_SHELLS = frozenset({ShellType.BASH, ShellType.ZSH, ShellType.SH})


def detect_shell_type(value: str) -> ShellType | None:
    """The shell type of an exact shell name or path, else None."""
    found = _EXACT.get(value)
    if found is not None:
        return found
    return _WINDOWS_NORMALISED.get(value.replace("\\", "/").lower())


def derive_exec_args(shell: ShellType, path: str, script: str, login: bool) -> list[str]:
    """The handler argv that runs `script` in the given shell."""
    if shell in POSIX_SHELLS:
        return [path, "-lc" if login else "-c", script]
    if shell is ShellType.POWERSHELL:
        return [path, "-Command", script] if login else [path, "-NoProfile", "-Command", script]
    return [path, "/c", script]


def is_posix_shell(argv0: str) -> bool:
    """True when argv0 is an allowlisted bash/zsh/sh."""
    return detect_shell_type(argv0) in POSIX_SHELLS


def argv_tuple(argv: Sequence[str]) -> tuple[str, ...]:
    """A hashable copy of an argv."""
    return tuple(argv)
