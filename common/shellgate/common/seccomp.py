"""The seccomp filters handed to bubblewrap (`--seccomp FD`), one per network setting, as Codex's.

Codex 0.169 runs every sandboxed command under a seccomp filter (its sandbox helper; read
back from a running `codex sandbox` command with PTRACE_SECCOMP_GET_FILTER), a different one
with the network off and on.

**Network off** (`seccomp_filter(network_access=False)`, codex-rs/linux-sandbox "Restricted"
mode): `socket()` succeeds only for `AF_UNIX`, and every call that names, reaches, serves or
inspects a socket's peer fails with EPERM, so a command cannot reach a host service's unix
socket (a database's, Redis', the daemons') even though the filesystem shows it.

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

**Network on** (`seccomp_filter(network_access=True)`): Codex's filter then refuses only
`io_uring_setup/enter/register` and `socket()`/`socketpair()` of `AF_VSOCK` (a VM's channel
to its host, which no network namespace governs), with EPERM; everything else passes,
`ptrace` included (observed: `strace -f true` runs). shellgate refuses the same, on the
same three ABIs, and as with the network off also every x32 call (Codex's x86_64-only
filter lets x32 numbers, io_uring's among them, through) and i386's `socketcall` (whose
arguments hide the family; Codex kills every i386 call).

**Proxied** (`seccomp_filter(network_access=True, proxied=True)`: the network governed by
the egress proxy, `egress/bridge`): the command keeps its empty network namespace, and the
in-sandbox bridge's loopback port is its one way out. `socket()` is allowed only for
`AF_INET`/`AF_INET6` (which reach nothing but that namespace's loopback), `socketpair()` only
for `AF_UNIX` (a pair reaches nobody), so no host unix socket can be reached and nothing
else opened; `ptrace` is refused too (the bridge runs unfiltered in the same namespace), with
io_uring, i386's `socketcall` and every x32 call, as with the network off.

Hand-assembled: bubblewrap loads a compiled classic BPF program from a file descriptor, and
no library for compiling one ships with Python (libseccomp's bindings are a distribution
package, not a wheel), so the program of a few dozen fixed instructions is assembled here
from the tables below. Other architectures (and aarch64's 32-bit compat mode) are let
through unfiltered; there, with the network off, the empty network namespace is the only
barrier.
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
_AF_VSOCK = 40
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF
_EPERM = 1

Numbers = dict[str, tuple[int | None, int | None, int | None]]
# System call numbers as (x86_64, aarch64, i386), from asm/unistd_64.h, asm-generic/unistd.h
# (aarch64's table) and asm/unistd_32.h; None where the ABI has no such call.
# Network off: always EPERM.
DENIED: Numbers = {
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
# Network off: allowed only for an AF_UNIX stream or seqpacket socket (arg0 family, arg1 type).
UNIX_STREAM_ONLY: Numbers = {
    "socket": (41, 198, 359),
    "socketpair": (53, 199, 360),
}
# Network on: always EPERM, and allowed for every family but AF_VSOCK (arg0).
DENIED_WITH_NETWORK: Numbers = {
    name: DENIED[name]
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register", "socketcall")
}
NO_VSOCK: Numbers = dict(UNIX_STREAM_ONLY)
# Proxied: always EPERM; socket() for AF_INET/AF_INET6 only, socketpair() for AF_UNIX only.
DENIED_PROXIED: Numbers = {**DENIED_WITH_NETWORK, "ptrace": DENIED["ptrace"]}
_AF_INET, _AF_INET6 = 2, 10
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


def _numbers(table: Numbers, column: int) -> list[int]:
    return [nr for nrs in table.values() if (nr := nrs[column]) is not None]


def _arch_block(
    name: str, column: int, denied: Numbers, checked: Numbers, proxied: bool = False
) -> list[_Op]:
    """One architecture's checks: its system call number against the tables."""
    ops = [_Op(_LD_W_ABS, _NR, label=name)]
    if name == "x86_64":
        ops.append(_Op(_JGE_K, _X32_SYSCALL_BIT, jt="deny"))
    for call, nrs in checked.items():
        nr = nrs[column]
        if nr is not None:
            # Proxied: socketpair has its own check (AF_UNIX), socket() the INET one.
            target = "pair" if proxied and call == "socketpair" else "family"
            ops.append(_Op(_JEQ_K, nr, jt=target))
    ops += [_Op(_JEQ_K, nr, jt="deny") for nr in _numbers(denied, column)]
    return [*ops, _Op(_RET_K, _ALLOW)]


def _family_check(network_access: bool, proxied: bool = False) -> list[_Op]:
    """What `socket()`/`socketpair()` may make (jumped to at label `family`)."""
    if proxied:
        return [
            _Op(_LD_W_ABS, _ARG0_LOW, label="family"),
            _Op(_JEQ_K, _AF_INET, jt="allow"),
            _Op(_JEQ_K, _AF_INET6, jt="allow", jf="deny"),
            _Op(_LD_W_ABS, _ARG0_LOW, label="pair"),
            _Op(_JEQ_K, _AF_UNIX, jt="allow", jf="deny"),
        ]
    if network_access:
        return [
            _Op(_LD_W_ABS, _ARG0_LOW, label="family"),
            _Op(_JEQ_K, _AF_VSOCK, jt="deny", jf="allow"),
        ]
    return [
        _Op(_LD_W_ABS, _ARG0_LOW, label="family"),
        _Op(_JEQ_K, _AF_UNIX, jf="deny"),
        _Op(_LD_W_ABS, _ARG1_LOW),
        # The type word also carries SOCK_NONBLOCK / SOCK_CLOEXEC.
        _Op(_ALU_AND_K, _SOCK_TYPE_MASK),
        _Op(_JEQ_K, _SOCK_STREAM, jt="allow"),
        _Op(_JEQ_K, _SOCK_SEQPACKET, jt="allow", jf="deny"),
    ]


def _program(network_access: bool, proxied: bool = False) -> list[_Op]:
    denied, checked = (
        (DENIED_WITH_NETWORK, NO_VSOCK) if network_access else (DENIED, UNIX_STREAM_ONLY)
    )
    if proxied:
        denied = DENIED_PROXIED
    ops = [_Op(_LD_W_ABS, _ARCH)]
    ops += [_Op(_JEQ_K, audit, jt=name) for name, audit in _ARCHES]
    ops.append(_Op(_RET_K, _ALLOW))
    for column, (name, _audit) in enumerate(_ARCHES):
        ops += _arch_block(name, column, denied, checked, proxied)
    return [
        *ops,
        *_family_check(network_access, proxied),
        _Op(_RET_K, _ALLOW, label="allow"),
        _Op(_RET_K, _DENY, label="deny"),
    ]


def seccomp_filter(network_access: bool, proxied: bool = False) -> bytes:
    """The filter for a network setting as `struct sock_filter[]` bytes (what
    `bwrap --seccomp FD` reads); `proxied`: the egress proxy's (network governed)."""
    program = _program(network_access, proxied)
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
_memfds: dict[tuple[bool, bool], int] = {}


def seccomp_filter_path(network_access: bool, proxied: bool = False) -> str:
    """A path to the filter that a child of this process can open, and nobody can change.

    Each filter lives in a sealed memfd owned by this process for its lifetime; a child
    opens `/proc/<this pid>/fd/<n>` for a fresh read offset (bubblewrap reads it to EOF).
    A file on disk would be writable by sandboxed commands of the same uid under a
    writable root such as /tmp; a sealed memfd cannot be written by anyone.
    """
    with _lock:
        key = (network_access, proxied)
        fd = _memfds.get(key)
        if fd is None:
            name = "shellgate-netfilter-on" if network_access else "shellgate-netfilter"
            name += "-proxied" if proxied else ""
            fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.write(fd, seccomp_filter(network_access, proxied))
            seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals | fcntl.F_SEAL_WRITE)
            _memfds[key] = fd
        return f"/proc/{os.getpid()}/fd/{fd}"
