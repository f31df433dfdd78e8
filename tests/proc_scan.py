"""Finding live processes by what their command line starts with (escape and orphan tests)."""

from __future__ import annotations

from pathlib import Path


def pids_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose argv starts with `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv.startswith(token.encode()) and state != "Z":
            found.append(int(entry.name))
    return found
