"""Finding live processes by what their command line starts with (escape and orphan tests)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.waiting import eventually


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


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def rss_bytes(pid: int) -> int:
    """Resident set size of `pid` (VmRSS from /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def wait_rss_below(pid: int, limit: int, within_s: float) -> int:
    """Poll until `pid`'s RSS is below `limit` bytes (at most `within_s`); the last reading."""
    last = [0]

    def below() -> bool:
        last[0] = rss_bytes(pid)
        return last[0] < limit

    with contextlib.suppress(AssertionError):  # the caller asserts on the reading
        eventually(below, f"pid {pid}'s RSS below {limit} bytes", within_s, 0.2)
    return last[0]
