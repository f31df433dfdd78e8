"""The network-off seccomp filter handed to bubblewrap (`--seccomp FD`), as Codex applies one.

Codex 0.169 fails `socket()` itself with EPERM when the network is off (its sandbox helper
installs a seccomp filter; `AF_UNIX` stays allowed). bubblewrap loads a compiled classic BPF
program from a file descriptor, and no library for compiling one ships with Python, so the
fixed 17-instruction program is assembled here.

Denied with EPERM: `socket()` for every family but `AF_UNIX` (x86_64, aarch64, and i386's
`socket`), i386's whole `socketcall` multiplexer, and every x32 system call (a process can
switch ABI; nothing a sandboxed command runs needs x32). Everything else is allowed.
Residual: io_uring's socket opcode is not filtered (the network namespace still has no
interface but loopback).
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
from dataclasses import dataclass

_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_AARCH64 = 0xC00000B7
_AUDIT_ARCH_I386 = 0x40000003
_X32_SYSCALL_BIT = 0x40000000
_SOCKET_X86_64, _SOCKET_AARCH64, _SOCKET_I386, _SOCKETCALL_I386 = 41, 198, 359, 102
_AF_UNIX = 1
_EPERM = 1

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | _EPERM  # SECCOMP_RET_ERRNO | EPERM
# Offsets in struct seccomp_data: nr, arch, then args[6] as u64 (the low word first).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


@dataclass(frozen=True)
class _Op:
    """One BPF instruction; jumps name labels (None: fall through)."""

    code: int
    k: int
    jt: str | None = None
    jf: str | None = None
    label: str | None = None


_PROGRAM = (
    _Op(_LD_W_ABS, _ARCH),
    _Op(_JEQ_K, _AUDIT_ARCH_X86_64, jt="x86_64"),
    _Op(_JEQ_K, _AUDIT_ARCH_AARCH64, jt="aarch64"),
    _Op(_JEQ_K, _AUDIT_ARCH_I386, jt="i386"),
    _Op(_RET_K, _ALLOW),
    _Op(_LD_W_ABS, _NR, label="x86_64"),
    _Op(_JGE_K, _X32_SYSCALL_BIT, jt="deny"),
    _Op(_JEQ_K, _SOCKET_X86_64, jt="family", jf="allow"),
    _Op(_LD_W_ABS, _NR, label="aarch64"),
    _Op(_JEQ_K, _SOCKET_AARCH64, jt="family", jf="allow"),
    _Op(_LD_W_ABS, _NR, label="i386"),
    _Op(_JEQ_K, _SOCKETCALL_I386, jt="deny"),
    _Op(_JEQ_K, _SOCKET_I386, jt="family", jf="allow"),
    _Op(_LD_W_ABS, _ARG0_LOW, label="family"),
    _Op(_JEQ_K, _AF_UNIX, jt="allow", jf="deny"),
    _Op(_RET_K, _ALLOW, label="allow"),
    _Op(_RET_K, _DENY, label="deny"),
)


def network_filter() -> bytes:
    """The filter as `struct sock_filter[]` bytes (what `bwrap --seccomp FD` reads)."""
    labels = {op.label: i for i, op in enumerate(_PROGRAM) if op.label}

    def offset(i: int, target: str | None) -> int:
        return 0 if target is None else labels[target] - (i + 1)

    return b"".join(
        struct.pack("<HBBI", op.code, offset(i, op.jt), offset(i, op.jf), op.k)
        for i, op in enumerate(_PROGRAM)
    )


_lock = threading.Lock()
_memfd: int | None = None


def network_filter_path() -> str:
    """A path to the filter that a child of this process can open, and nobody can change.

    The filter lives in a sealed memfd owned by this process for its lifetime; a child
    opens `/proc/<this pid>/fd/<n>` for a fresh read offset (bubblewrap reads it to EOF).
    A file on disk would be writable by sandboxed commands of the same uid under a
    writable root such as /tmp; a sealed memfd cannot be written by anyone.
    """
    global _memfd
    with _lock:
        if _memfd is None:
            fd = os.memfd_create("shellgate-netfilter", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.write(fd, network_filter())
            seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals | fcntl.F_SEAL_WRITE)
            _memfd = fd
        return f"/proc/{os.getpid()}/fd/{_memfd}"
