"""Confined file RPCs against a racer: a folder in the root flips to a symlink out of it.

The attack from issue 13 (finding 6), run against a real daemon: a racer process swaps
`ws/dir` between a real folder and a symlink to `outside/` as fast as it can while the
client sends Remove / Rename / MakeDirectory / WriteFile into `ws/dir`. After every
RPC the test compares `outside/` with its sentinel contents; any difference is a win for
the racer. Every RPC must end in a status a client can act on, never INTERNAL or UNKNOWN.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message
from shellgate.common import confined_fs
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2 as shell_pb

from tests.execserver_harness import daemon_config, exec_stub, in_process_daemon

MAX_OPERATIONS = 1_500
MAX_SECONDS = 15.0
RPC_TIMEOUT_S = 10.0
# What a client can act on: done, gone, refused, or failed with an errno.
ACCEPTABLE = {
    grpc.StatusCode.OK,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.FAILED_PRECONDITION,
}
SENTINEL = b"outside, keep"


@dataclass
class Arena:
    """A writable root with the flipping folder, and the sentinels outside it."""

    ws: Path
    outside: Path
    expected: dict[str, bytes | None] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        """The folder the racer flips (a real folder, or a symlink to outside/)."""
        return self.ws / "dir"

    @property
    def sandbox(self) -> shell_pb.SandboxRequest:
        """workspace-write with ws as the only writable root."""
        return shell_pb.SandboxRequest(
            mode=shell_pb.SANDBOX_MODE_WORKSPACE_WRITE, writable_roots=[str(self.ws)]
        )

    def stock(self, folder: Path) -> None:
        """The entries every operation aims at (also what the outside holds)."""
        (folder / "victim").write_bytes(SENTINEL)
        (folder / "tree" / "deep").mkdir(parents=True, exist_ok=True)
        (folder / "tree" / "deep" / "leaf").write_bytes(SENTINEL)

    def snapshot(self) -> dict[str, bytes | None]:
        """Every entry below outside/: file contents, None for a folder."""
        found: dict[str, bytes | None] = {}
        for top, dirs, names in os.walk(self.outside):
            for name in dirs:
                found[os.path.relpath(os.path.join(top, name), self.outside)] = None
            for name in names:
                path = os.path.join(top, name)
                found[os.path.relpath(path, self.outside)] = Path(path).read_bytes()
        return found

    def restore(self) -> None:
        """Put outside/ back to its sentinel state after a racer win."""
        shutil.rmtree(self.outside)
        self.outside.mkdir()
        self.stock(self.outside)


# The racer runs as its own process so it flips at full speed on the other core. It swaps
# ws/dir and ws/.alt atomically (renameat2 RENAME_EXCHANGE): ws/dir always exists, and is
# a real folder or a symlink to outside/ every other flip; the real folder is restocked
# (through ws/.alt, while it is parked there) when an operation took its entries.
RACER = r"""
import ctypes, os, signal, sys

ws, outside = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
here, there = os.fsencode(os.path.join(ws, "dir")), os.fsencode(os.path.join(ws, ".alt"))
stop = False

def on_term(*_):
    global stop
    stop = True

def stock(folder):
    try:
        restock(folder)
    except OSError:
        pass  # an operation that opened the folder before the flip is still working in it

def restock(folder):
    victim = os.path.join(folder, "victim")
    if not os.path.lexists(victim):
        with open(victim, "wb") as f:
            f.write(b"outside, keep")
    deep = os.path.join(folder, "tree", "deep")
    if not os.path.lexists(os.path.join(deep, "leaf")):
        os.makedirs(deep, exist_ok=True)
        with open(os.path.join(deep, "leaf"), "wb") as f:
            f.write(b"outside, keep")

signal.signal(signal.SIGTERM, on_term)
os.mkdir(os.path.join(ws, "dir"))
stock(os.path.join(ws, "dir"))
os.symlink(outside, os.path.join(ws, ".alt"))
print("ready", flush=True)
flips = 0
while not stop:
    if libc.renameat2(AT_FDCWD, here, AT_FDCWD, there, RENAME_EXCHANGE) != 0:
        sys.exit(f"renameat2: {os.strerror(ctypes.get_errno())}")
    flips += 1
    if flips % 2:  # the real folder is parked at ws/.alt, out of the operations' way
        stock(os.path.join(ws, ".alt"))
print(flips, flush=True)
"""


@dataclass
class Racer:
    """The racer process; flips is known once it stopped."""

    proc: subprocess.Popen[str]
    flips: int = 0


Operation = Callable[[Arena, int], tuple[str, Message]]


def remove(arena: Arena, i: int) -> tuple[str, Message]:
    """A file, then a whole tree, through the flipping folder."""
    if i % 2:
        return "Remove", pb.RemoveRequest(path=str(arena.dir / "victim"), sandbox=arena.sandbox)
    tree = str(arena.dir / "tree")
    return "Remove", pb.RemoveRequest(path=tree, recursive=True, sandbox=arena.sandbox)


def rename(arena: Arena, i: int) -> tuple[str, Message]:
    """Into the flipping folder (creating parents or not), and out of it."""
    stable = arena.ws / "stable"
    if i % 3 == 2:
        return "Rename", pb.RenameRequest(
            from_path=str(arena.dir / "victim"), to_path=str(stable / f"got{i}"),
            sandbox=arena.sandbox,
        )
    source = stable / f"src{i}"
    source.write_bytes(b"mine")
    target = arena.dir / "new" / f"moved{i}" if i % 3 else arena.dir / f"moved{i}"
    return "Rename", pb.RenameRequest(
        from_path=str(source), to_path=str(target), create_parents=bool(i % 3),
        sandbox=arena.sandbox,
    )


def make_directory(arena: Arena, i: int) -> tuple[str, Message]:
    """One level, or several with parents."""
    path = arena.dir / f"d{i}" / "sub" if i % 2 else arena.dir / f"d{i}"
    return "MakeDirectory", pb.MakeDirectoryRequest(
        path=str(path), parents=bool(i % 2), sandbox=arena.sandbox
    )


def write_file(arena: Arena, i: int) -> tuple[str, Message]:
    """Over an existing file, a new file, and a new file with parents."""
    name = ("victim", f"new{i}", f"p{i}/new")[i % 3]
    return "WriteFile", pb.WriteFileRequest(
        path=str(arena.dir / name), data=b"mine", create_parents=i % 3 == 2,
        sandbox=arena.sandbox,
    )


@contextlib.contextmanager
def racing(arena: Arena) -> Iterator[Racer]:
    """The racer process, running once it printed ready; SIGTERM and its flip count on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RACER, str(arena.ws), str(arena.outside)],
        stdout=subprocess.PIPE, text=True,
    )
    racer = Racer(proc)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield racer
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0, f"racer failed: {proc.returncode}"
        racer.flips = int(out.strip() or 0)


async def race(arena: Arena, operation: Operation) -> tuple[int, Counter[grpc.StatusCode]]:
    """Run the operation against a fresh daemon while the racer flips; wins and codes."""
    wins, codes = 0, Counter[grpc.StatusCode]()
    async with (
        in_process_daemon(daemon_config()) as daemon,
        exec_stub(f"127.0.0.1:{daemon.port}") as stub,
    ):
        deadline = time.monotonic() + MAX_SECONDS
        for i in range(MAX_OPERATIONS):
            if time.monotonic() > deadline:
                break
            rpc, request = operation(arena, i)
            try:
                await getattr(stub, rpc)(request, timeout=RPC_TIMEOUT_S)
                codes[grpc.StatusCode.OK] += 1
            except grpc.aio.AioRpcError as exc:
                codes[exc.code()] += 1
            if arena.snapshot() != arena.expected:
                wins += 1
                arena.restore()
    return wins, codes


@pytest.mark.slow
@pytest.mark.parametrize("resolver", ["openat2", "walk"])
@pytest.mark.parametrize(
    "operation", [remove, rename, make_directory, write_file], ids=lambda f: f.__name__
)
def test_a_racing_symlink_never_lets_a_confined_rpc_touch_the_outside(
    tmp_path: Path, operation: Operation, resolver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if resolver == "openat2" and not confined_fs.kernel_resolves_beneath():
        pytest.skip("this kernel has no openat2 (the walk variant covers it)")
    # The daemon runs in-process so the walk can be chosen on a kernel that has openat2.
    monkeypatch.setattr(confined_fs, "kernel_resolves_beneath", lambda: resolver == "openat2")
    arena = Arena(tmp_path / "ws", tmp_path / "outside")
    for folder in (arena.ws, arena.outside, arena.ws / "stable"):
        folder.mkdir()
    arena.stock(arena.outside)
    arena.expected = arena.snapshot()
    with racing(arena) as racer:
        wins, codes = asyncio.run(race(arena, operation))
    outcome = f"{operation.__name__}: {wins} wins, {racer.flips} flips, {dict(codes)}"
    print(outcome)
    assert wins == 0, outcome
    assert set(codes) <= ACCEPTABLE, outcome
    # Not vacuous: the racer really raced, and operations really went through.
    assert racer.flips >= 100 and codes[grpc.StatusCode.OK] > 0, outcome
