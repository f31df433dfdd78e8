"""Prefixes Codex 0.169 never offers as permanent allow rules (spec 04 §5.2, issue 14)."""

from __future__ import annotations

from collections.abc import Sequence

# Exact-match only: a longer prefix such as ["python", "-c", "print(1)"] is not banned.
# Codex 0.169's list: the older one plus the shells, interpreters and Windows launchers its
# binary refuses (read from the binary's strings and behaviour; docs/rules.md).
_SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "fish")
_SHELL_PATHS = tuple(f"/bin/{s}" for s in _SHELLS) + tuple(f"/usr/bin/{s}" for s in _SHELLS)
BANNED_PREFIX_SUGGESTIONS: frozenset[tuple[str, ...]] = frozenset(
    tuple(entry.split(" "))
    for entry in (
        "python3",
        "python3 -",
        "python3 -c",
        "python",
        "python -",
        "python -c",
        "py",
        "py -3",
        "py -c",
        "pythonw",
        "pyw",
        "pypy",
        "pypy -c",
        "pypy3",
        "pypy3 -c",
        "git",
        *(f"{shell}{flag}" for shell in _SHELLS + _SHELL_PATHS for flag in ("", " -c", " -lc")),
        "pwsh",
        "pwsh -Command",
        "pwsh -c",
        "pwsh -EncodedCommand",
        "pwsh -ec",
        "pwsh -File",
        "pwsh -f",
        "powershell",
        "powershell -Command",
        "powershell -c",
        "powershell -EncodedCommand",
        "powershell -ec",
        "powershell -File",
        "powershell -f",
        "powershell.exe",
        "powershell.exe -Command",
        "powershell.exe -c",
        "powershell.exe -EncodedCommand",
        "powershell.exe -ec",
        "powershell.exe -File",
        "powershell.exe -f",
        "cmd",
        "cmd /c",
        "cmd /k",
        "cmd.exe",
        "cmd.exe /c",
        "cmd.exe /k",
        "env",
        "sudo",
        "node",
        "node -e",
        "nodejs",
        "nodejs -e",
        "deno",
        "deno eval",
        "bun",
        "bun -e",
        "perl",
        "perl -e",
        "ruby",
        "ruby -e",
        "php",
        "php -r",
        "lua",
        "lua -e",
        "julia",
        "julia -e",
        "Rscript",
        "Rscript -e",
        "osascript",
    )
)


def is_banned_prefix(prefix: Sequence[str]) -> bool:
    """Whether a prefix is one Codex never offers as a permanent allow rule (too broad)."""
    return tuple(prefix) in BANNED_PREFIX_SUGGESTIONS


__all__ = ["BANNED_PREFIX_SUGGESTIONS", "is_banned_prefix"]
