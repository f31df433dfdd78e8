"""The network-off seccomp filter handed to bubblewrap (`--seccomp FD`), as Codex applies one.

With the network off Codex 0.169 runs commands under a seccomp filter (its sandbox helper;
observed with `codex sandbox`, codex-rs/linux-sandbox "Restricted" mode): `socket()`
succeeds only for `AF_UNIX`, and every call that names, reaches, serves or inspects a
socket's peer fails with EPERM, so a command cannot reach a host service's unix socket (a
database's, Redis', the daemons') even though the filesystem shows it.

Denied with EPERM, on x86_64, aarch64 and i386 (each number from the kernel's own table):
`connect`, `accept`, `accept4`, `bind`, `listen`, `getpeername`, `getsockname`, `shutdown`,
`sendto`, `sendmmsg`, `recvmmsg`, `getsockopt`, `setsockopt`, `ptrace` and
`io_uring_setup/enter/register` (io_uring could open and connect sockets behind the
filter's back), as Codex does; i386's whole `socketcall` multiplexer (it hides which call
it is) and every x32 system call (a process can switch ABI; nothing a sandboxed command
runs needs x32). `socket()` and `socketpair()` are allowed only for `AF_UNIX` stream or
seqpacket sockets: an `AF_UNIX` datagram socket (or `SOCK_RAW`, which the kernel makes a
datagram socket) can `sendmsg()` to a host's named datagram socket without `connect()`,
which Codex 0.169 lets through (observed) and shellgate does not. Everything else is
allowed: `recvfrom` (Codex keeps it for tools that talk over a socketpair), `sendmsg`,
`recvmsg`, read and write on the sockets a command made itself.

Hand-assembled: bubblewrap loads a compiled classic BPF program from a file descriptor, and
no library for compiling one ships with Python (libseccomp's bindings are a distribution
package, not a wheel), so the program of a few dozen fixed instructions is assembled here
from the tables below. Other architectures (and aarch64's 32-bit compat mode) are let
through unfiltered; there the empty network namespace is the only barrier.
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
_AF_UNIX = 1
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF
_EPERM = 1

# System call numbers as (x86_64, aarch64, i386), from asm/unistd_64.h, asm-generic/unistd.h
# (aarch64's table) and asm/unistd_32.h; None where the ABI has no such call.
DENIED: dict[str, tuple[int | None, int | None, int | None]] = {
    "connect": (42, 203, 362),
    "accept": (43, 202, None),  # i386 has it only through socketcall
    "accept4": (288, 242, 364),
    "bind": (49, 200, 361),
    "listen": (50, 201, 363),
    "getpeername": (52, 205, 368),
    "getsockname": (51, 204, 367),
    "shutdown": (48, 210, 373),
    "sendto": (44, 206, 369),
    "sendmmsg": (307, 269, 345),
    "recvmmsg": (299, 243, 337),
    "recvmmsg_time64": (None, None, 417),  # 32-bit ABIs' second recvmmsg
    "getsockopt": (55, 209, 365),
    "setsockopt": (54, 208, 366),
    "ptrace": (101, 117, 26),
    "io_uring_setup": (425, 425, 425),
    "io_uring_enter": (426, 426, 426),
    "io_uring_register": (427, 427, 427),
    "socketcall": (None, None, 102),
}
# Allowed only for an AF_UNIX stream or seqpacket socket (arg0 family, arg1 type).
UNIX_STREAM_ONLY: dict[str, tuple[int | None, int | None, int | None]] = {
    "socket": (41, 198, 359),
    "socketpair": (53, 199, 360),
}
_ARCHES = (
    ("x86_64", _AUDIT_ARCH_X86_64),
    ("aarch64", _AUDIT_ARCH_AARCH64),
    ("i386", _AUDIT_ARCH_I386),
)

_LD_W_ABS, _ALU_AND_K, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x54, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | _EPERM  # SECCOMP_RET_ERRNO | EPERM
# Offsets in struct seccomp_data: nr, arch, then args[6] as u64 (the low word first).
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24


@dataclass(frozen=True)
class _Op:
    """One BPF instruction; jumps name labels (None: fall through)."""

    code: int
    k: int
    jt: str | None = None
    jf: str | None = None
    label: str | None = None


def _numbers(table: dict[str, tuple[int | None, int | None, int | None]], column: int) -> list[int]:
    return [nr for nrs in table.values() if (nr := nrs[column]) is not None]


def _arch_block(name: str, column: int) -> list[_Op]:
    """One architecture's checks: its system call number against the tables."""
    ops = [_Op(_LD_W_ABS, _NR, label=name)]
    if name == "x86_64":
        ops.append(_Op(_JGE_K, _X32_SYSCALL_BIT, jt="deny"))
    ops += [_Op(_JEQ_K, nr, jt="unix") for nr in _numbers(UNIX_STREAM_ONLY, column)]
    ops += [_Op(_JEQ_K, nr, jt="deny") for nr in _numbers(DENIED, column)]
    return [*ops, _Op(_RET_K, _ALLOW)]


def _program() -> list[_Op]:
    ops = [_Op(_LD_W_ABS, _ARCH)]
    ops += [_Op(_JEQ_K, audit, jt=name) for name, audit in _ARCHES]
    ops.append(_Op(_RET_K, _ALLOW))
    for column, (name, _audit) in enumerate(_ARCHES):
        ops += _arch_block(name, column)
    return [
        *ops,
        _Op(_LD_W_ABS, _ARG0_LOW, label="unix"),
        _Op(_JEQ_K, _AF_UNIX, jf="deny"),
        _Op(_LD_W_ABS, _ARG1_LOW),
        # The type word also carries SOCK_NONBLOCK / SOCK_CLOEXEC.
        _Op(_ALU_AND_K, _SOCK_TYPE_MASK),
        _Op(_JEQ_K, _SOCK_STREAM, jt="allow"),
        _Op(_JEQ_K, _SOCK_SEQPACKET, jt="allow", jf="deny"),
        _Op(_RET_K, _ALLOW, label="allow"),
        _Op(_RET_K, _DENY, label="deny"),
    ]


def network_filter() -> bytes:
    """The filter as `struct sock_filter[]` bytes (what `bwrap --seccomp FD` reads)."""
    program = _program()
    labels = {op.label: i for i, op in enumerate(program) if op.label}

    def offset(i: int, target: str | None) -> int:
        jump = 0 if target is None else labels[target] - (i + 1)
        if not 0 <= jump <= 255:
            # Classic BPF jumps forward only, by at most 255 instructions.
            raise ValueError(f"seccomp program: jump to {target} is {jump} instructions")
        return jump

    return b"".join(
        struct.pack("<HBBI", op.code, offset(i, op.jt), offset(i, op.jf), op.k)
        for i, op in enumerate(program)
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
