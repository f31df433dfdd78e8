"""From /proc: is a process group blocked reading its stdin (pipe or tty)?"""

from __future__ import annotations

import os
import platform

from shellgate.common.process.procgroup import group_members

# Syscalls that block waiting on input: read/readv plus the poll/select family (readline
# waits in pselect6). Numbers differ per architecture.
_READ_SYSCALLS: dict[str, frozenset[int]] = {
    "x86_64": frozenset({0, 19, 7, 23, 270, 271}),
    "aarch64": frozenset({63, 65, 72, 73}),
}
_FD_ARG_SYSCALLS: dict[str, frozenset[int]] = {
    "x86_64": frozenset({0, 19}),
    "aarch64": frozenset({63, 65}),
}


def _stdin_target(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        return None


def _blocked_on_stdin(pid: int, arch: str) -> bool:
    try:
        with open(f"/proc/{pid}/syscall") as handle:
            fields = handle.read().split()
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    if state != "S" or not fields or fields[0] in ("running", "-1"):
        return False
    number = int(fields[0])
    if number not in _READ_SYSCALLS.get(arch, frozenset()):
        return False
    stdin = _stdin_target(pid)
    if stdin is None or not (stdin.startswith("/dev/pts/") or stdin.startswith("pipe:")):
        return False
    if number in _FD_ARG_SYSCALLS.get(arch, frozenset()):
        fd = int(fields[1], 16)
        try:
            return os.readlink(f"/proc/{pid}/fd/{fd}") == stdin
        except OSError:
            return False
    return True


def is_awaiting_input(pgid: int) -> bool:
    """True when a member of the group waits reading stdin (a shim waits in wait4, not read)."""
    arch = platform.machine()
    return any(_blocked_on_stdin(pid, arch) for pid in group_members(pgid))
