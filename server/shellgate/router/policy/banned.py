"""Prefixes Codex 0.169 never offers as permanent allow rules (spec 04 §5.2, issue 14)."""

from __future__ import annotations

from collections.abc import Sequence

# Exact-match only: a longer prefix such as ["python", "-c", "print(1)"] is not banned, and
# neither is a spelling the list lacks (`/bin/dash`, `dash -lc`, `py -c`, `cmd /C`).
# This is exactly the 0.169.0 binary's list, asked of the binary itself: docs/rules.md
# shows how (tests/integration/test_amendment_oracle.py) and the recorded answers.
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
        "pythonw",
        "pyw",
        "pypy",
        "pypy3",
        "git",
        "bash",
        "bash -c",
        "bash -lc",
        "sh",
        "sh -c",
        "sh -lc",
        "zsh",
        "zsh -c",
        "zsh -lc",
        "dash",
        "dash -c",
        "ksh",
        "ksh -c",
        "fish",
        "fish -c",
        "/bin/sh",
        "/bin/sh -c",
        "/bin/sh -lc",
        "/bin/bash",
        "/bin/bash -c",
        "/bin/bash -lc",
        "/bin/zsh",
        "/bin/zsh -c",
        "/bin/zsh -lc",
        "pwsh",
        "pwsh -Command",
        "pwsh -c",
        "pwsh -EncodedCommand",
        "pwsh -ec",
        "pwsh -e",
        "pwsh -File",
        "pwsh -f",
        "powershell",
        "powershell -Command",
        "powershell -c",
        "powershell -EncodedCommand",
        "powershell -File",
        "powershell.exe",
        "powershell.exe -Command",
        "powershell.exe -c",
        "powershell.exe -EncodedCommand",
        "powershell.exe -File",
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
        "bun run",
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
        "osascript",
    )
)


def is_banned_prefix(prefix: Sequence[str]) -> bool:
    """Whether a prefix is one Codex never offers as a permanent allow rule (too broad)."""
    return tuple(prefix) in BANNED_PREFIX_SUGGESTIONS


__all__ = ["BANNED_PREFIX_SUGGESTIONS", "is_banned_prefix"]
