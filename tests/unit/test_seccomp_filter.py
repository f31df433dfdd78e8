"""Both seccomp programs (network off, network on), run by a classic-BPF interpreter for
every ABI they name.

Only x86_64 runs here for real (tests/integration/test_sandbox_sockets.py, network off;
tests/integration/test_sandbox_network.py, on); this runs the same bytes bubblewrap loads for
aarch64 and i386 too, and checks every number against the kernel's own tables where its
headers are installed.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from shellgate.common.seccomp import (
    DENIED,
    DENIED_WITH_NETWORK,
    NO_VSOCK,
    UNIX_STREAM_ONLY,
    seccomp_filter,
)

ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "i386": 0x40000003}
COLUMN = {"x86_64": 0, "aarch64": 1, "i386": 2}
ALLOW, DENY = 0x7FFF0000, 0x00050001
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK = 1, 2, 10, 16, 40
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
SOCK_CLOEXEC, SOCK_NONBLOCK = 0x80000, 0x800
# Calls Codex keeps allowed (recvfrom, sendmsg, recvmsg) and ordinary ones, per ABI.
ALLOWED = {
    "x86_64": {"read": 0, "write": 1, "recvfrom": 45, "sendmsg": 46, "recvmsg": 47},
    "aarch64": {"read": 63, "write": 64, "recvfrom": 207, "sendmsg": 211, "recvmsg": 212},
    "i386": {"read": 3, "write": 4, "recvfrom": 371, "sendmsg": 370, "recvmsg": 372},
}
HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "i386": Path("/usr/include/x86_64-linux-gnu/asm/unistd_32.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


def run_filter(arch: int, nr: int, *args: int, network: bool = False) -> int:
    """What the program returns for one system call (struct seccomp_data, little endian)."""
    data = struct.pack("<IIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    program = seccomp_filter(network)
    insns: list[tuple[int, int, int, int]] = [
        struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)
    ]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = int.from_bytes(data[k : k + 4], "little")
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
        elif code == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += jt if acc == k else jf
        elif code == 0x35:  # BPF_JMP | BPF_JGE | BPF_K
            pc += jt if acc >= k else jf
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def _numbers(
    table: dict[str, tuple[int | None, int | None, int | None]], arch: str
) -> dict[str, int]:
    column = COLUMN[arch]
    return {name: nr for name, nrs in table.items() if (nr := nrs[column]) is not None}


@pytest.mark.parametrize("arch", ARCHES)
def test_every_listed_call_is_denied(arch: str) -> None:
    denied = _numbers(DENIED, arch)
    assert {"connect", "bind", "listen", "accept4", "sendto", "io_uring_setup"} <= set(denied)
    for name, nr in denied.items():
        assert run_filter(ARCHES[arch], nr) == DENY, (arch, name)


@pytest.mark.parametrize("arch", ARCHES)
def test_only_unix_stream_and_seqpacket_sockets_are_made(arch: str) -> None:
    for name, nr in _numbers(UNIX_STREAM_ONLY, arch).items():
        for family, kind, answer in [
            (AF_UNIX, SOCK_STREAM, ALLOW),
            (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, ALLOW),
            (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, ALLOW),
            # A datagram socket could sendmsg() to a host's named socket without connect().
            (AF_UNIX, SOCK_DGRAM, DENY),
            (AF_UNIX, SOCK_RAW, DENY),  # the kernel makes AF_UNIX SOCK_RAW a datagram socket
            (AF_INET, SOCK_STREAM, DENY),
            (AF_NETLINK, SOCK_RAW, DENY),
            (AF_UNIX | (1 << 32), SOCK_STREAM, ALLOW),  # only the low word is the family
        ]:
            assert run_filter(ARCHES[arch], nr, family, kind) == answer, (arch, name, family, kind)


@pytest.mark.parametrize("arch", ARCHES)
def test_ordinary_calls_and_what_codex_keeps_pass(arch: str) -> None:
    for name, nr in ALLOWED[arch].items():
        assert run_filter(ARCHES[arch], nr) == ALLOW, (arch, name)


def test_abi_switches_are_closed() -> None:
    # x32 (same audit arch, the x32 bit in nr) and i386's socketcall are denied whole.
    assert run_filter(ARCHES["x86_64"], 0x40000000 | 0) == DENY
    assert run_filter(ARCHES["i386"], 102) == DENY
    # An ABI the filter does not know passes (only the network namespace is left there).
    assert run_filter(0x40000028, 281, AF_INET) == ALLOW


@pytest.mark.parametrize("arch", ARCHES)
def test_numbers_are_the_kernels(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} not installed")
    defined = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text())
    }
    tables = {
        **_numbers(DENIED, arch), **_numbers(UNIX_STREAM_ONLY, arch),
        **_numbers(DENIED_WITH_NETWORK, arch), **_numbers(NO_VSOCK, arch),
    }  # fmt: skip
    assert {name: defined.get(name) for name in tables} == tables
    for name, nr in ALLOWED[arch].items():
        assert defined.get(name) == nr, name


# Network on: Codex 0.169's filter, read back from a running `codex sandbox` command
# (PTRACE_SECCOMP_GET_FILTER): EPERM for io_uring and AF_VSOCK sockets, nothing else.
@pytest.mark.parametrize("arch", ARCHES)
def test_network_on_denies_only_io_uring_and_vsock(arch: str) -> None:
    denied = _numbers(DENIED_WITH_NETWORK, arch)
    assert {"io_uring_setup", "io_uring_enter", "io_uring_register"} <= set(denied)
    for name, nr in denied.items():
        assert run_filter(ARCHES[arch], nr, network=True) == DENY, (arch, name)
    for name, nr in _numbers(NO_VSOCK, arch).items():
        for family, kind, answer in [
            (AF_INET, SOCK_STREAM, ALLOW),
            (AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, ALLOW),
            (AF_NETLINK, SOCK_RAW, ALLOW),
            (AF_UNIX, SOCK_DGRAM, ALLOW),
            (AF_UNIX, SOCK_STREAM, ALLOW),
            (AF_VSOCK, SOCK_STREAM, DENY),
            (AF_VSOCK, SOCK_DGRAM, DENY),
        ]:
            got = run_filter(ARCHES[arch], nr, family, kind, network=True)
            assert got == answer, (arch, name, family, kind)
    # What the network-off program denies passes now (ptrace too, as under Codex).
    for name in ("connect", "bind", "listen", "accept4", "sendto", "setsockopt", "ptrace"):
        number = DENIED[name][COLUMN[arch]]
        assert number is not None
        assert run_filter(ARCHES[arch], number, network=True) == ALLOW, (arch, name)
    for name, nr in ALLOWED[arch].items():
        assert run_filter(ARCHES[arch], nr, network=True) == ALLOW, (arch, name)


def test_network_on_keeps_the_abi_switches_closed() -> None:
    assert run_filter(ARCHES["x86_64"], 0x40000000 | 425, network=True) == DENY  # x32 io_uring
    assert run_filter(ARCHES["i386"], 102, network=True) == DENY  # socketcall hides the family
    assert run_filter(0x40000028, 425, network=True) == ALLOW
