"""Shell types: exact-allowlist detection and `derive_exec_args` (spec 02 §5)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class Shell:
    """A concrete shell: its type and the path that runs."""

    type: ShellType
    path: str


@dataclass(frozen=True)
class HostShellFacts:
    """Host facts for shell selection, gathered by the caller (no I/O in the stage).

    `which` maps a binary name (`bash`, `zsh`, `sh`, `pwsh`, `powershell`, `cmd`) to the path a
    `PATH` lookup found; `existing` lists the standard shell paths that exist on the host.
    """

    configured_shell: str | None = None
    passwd_shell: str | None = None
    which: Mapping[str, str] = field(default_factory=dict)
    existing: frozenset[str] = frozenset()
    windows: bool = False


# Binary names searched on PATH, then the standard locations, per type.
_LOOKUP_NAMES: dict[ShellType, tuple[str, ...]] = {
    ShellType.BASH: ("bash",),
    ShellType.ZSH: ("zsh",),
    ShellType.SH: ("sh",),
    ShellType.POWERSHELL: ("pwsh", "powershell"),
    ShellType.CMD: ("cmd",),
}
_STANDARD_PATHS: dict[ShellType, tuple[str, ...]] = {
    ShellType.BASH: ("/bin/bash", "/usr/bin/bash"),
    ShellType.ZSH: ("/bin/zsh", "/usr/bin/zsh"),
    ShellType.SH: ("/bin/sh", "/usr/bin/sh"),
    ShellType.POWERSHELL: ("/usr/local/bin/pwsh", "/usr/bin/pwsh", "/bin/pwsh"),
    ShellType.CMD: (),
}


def _fallback(facts: HostShellFacts) -> Shell:
    return Shell(ShellType.CMD, "cmd.exe") if facts.windows else Shell(ShellType.SH, "/bin/sh")


def lookup_shell(kind: ShellType, facts: HostShellFacts) -> Shell | None:
    """The system lookup for a type: passwd shell of that type, PATH, standard paths."""
    if facts.passwd_shell is not None and detect_shell_type(facts.passwd_shell) is kind:
        return Shell(kind, facts.passwd_shell)
    for name in _LOOKUP_NAMES[kind]:
        found = facts.which.get(name)
        if found:
            return Shell(kind, found)
    for path in _STANDARD_PATHS[kind]:
        if path in facts.existing:
            return Shell(kind, path)
    return None


def host_user_shell(facts: HostShellFacts) -> Shell:
    """The local environment's shell (spec 02 §5.2)."""
    if facts.windows:
        return Shell(ShellType.CMD, facts.configured_shell or "cmd.exe")
    if facts.configured_shell:
        kind = detect_shell_type(facts.configured_shell)
        return Shell(kind or ShellType.SH, facts.configured_shell)
    if facts.passwd_shell is not None:
        kind = detect_shell_type(facts.passwd_shell)
        if kind is not None:
            return Shell(kind, facts.passwd_shell)
    return lookup_shell(ShellType.BASH, facts) or _fallback(facts)


def shell_by_model_provided_path(path: str, facts: HostShellFacts) -> Shell:
    """`get_shell_by_model_provided_path`: the value only selects a type, never a binary."""
    kind = detect_shell_type(path)
    if kind is None:
        return _fallback(facts)
    return lookup_shell(kind, facts) or _fallback(facts)
