"""Profile the router under one bench's load: `python -m bench.profile_router project`.

Starts the router as the bench does (not pinned: CPU per call is what it measures), drives
the named load from this process for `--seconds`, and records the server with `py-spy record` (pip-installable)
into `--output` (SVG flame graph; `--format raw` gives collapsed stacks for grep/sort).
Loads: project, execute, once (the same through ExecuteOnce), concurrent (64 × `sleep 0.2`), bytes (64 MiB of `yes`), and
start (ExecService Start of `true` on the daemon, which is then the process profiled) and
remote (`exec_command` of `echo hi` through a router whose only environment is the daemon;
remote_once the same through ExecuteOnce).
`--cpu` skips py-spy and prints the server's CPU time per call from /proc/<pid>/stat (and
this client's, to tell which side bounds a stream): on a shared machine that decides a
change where wall-clock medians are noise.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import time

from bench.clients import router, sg_exec
from bench.corpus import corpus
from bench.peers import Peers
from bench.procs import scratch_home
from bench.suites.router_benches import _router_channel

LOADS = ("project", "execute", "once", "concurrent", "bytes", "start", "remote", "remote_once")
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (its reaped children not included)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


async def _drive(peers: Peers, load: str, seconds: float) -> int:
    deadline = time.perf_counter() + seconds
    if load == "start":
        stub = await peers.enter_async(sg_exec.exec_stub(peers.daemon().address))
        done = 0
        while time.perf_counter() < deadline:
            await sg_exec.run(stub, ["true"], peers.env, peers.home)
            done += 1
        return done
    remote = load in ("remote", "remote_once")
    stub, _ = router.stubs(await _router_channel(peers, remote=remote))
    turn_pb = router.turn(peers.home, environment=peers.REMOTE_ENVIRONMENT if remote else "local")
    done = 0
    if load == "project":
        requests = [router.project_request(i, turn_pb) for i in corpus(1000)]
        counter = itertools.count()

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                await stub.Project(requests[next(counter) % len(requests)])
                done += 1

        await asyncio.gather(*(worker() for _ in range(16)))
        return done
    command = {
        "execute": "echo hi",
        "once": "echo hi",
        "remote": "echo hi",
        "remote_once": "echo hi",
        "concurrent": "sleep 0.2",
        "bytes": "yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c 67108864",
    }[load]
    item = router.exec_item("echo hi") if remote else router.shell_item(command)
    width = 64 if load == "concurrent" else 1
    if load in ("once", "remote_once"):
        # ExecuteOnce: the unary fast path of the same call.
        while time.perf_counter() < deadline:
            await router.execute_once(stub, item, turn_pb)
            done += 1
        return done
    while time.perf_counter() < deadline:
        await asyncio.gather(*(router.execute(stub, item, turn_pb) for _ in range(width)))
        done += width
    return done


async def _main(args: argparse.Namespace) -> None:
    with scratch_home() as home:
        peers = Peers(home)
        try:
            server = {"start": peers.daemon, "remote": peers.router_remote,
                      "remote_once": peers.router_remote}.get(args.load)  # fmt: skip
            pid = (server or peers.router)().pid
            await _drive(peers, args.load, 1.0)  # warm-up: imports, caches, first parse
            if args.cpu:
                before, t0 = cpu_seconds(pid), time.perf_counter()
                client_before = cpu_seconds(os.getpid())
                n = await _drive(peers, args.load, args.seconds)
                cpu, wall = cpu_seconds(pid) - before, time.perf_counter() - t0
                client = cpu_seconds(os.getpid()) - client_before
                print(f"{args.load}: {n} calls, server CPU {cpu / n * 1e3:.3f} ms/call, "
                      f"client CPU {client / n * 1e3:.3f} ms/call, "
                      f"wall {wall / n * 1e3:.3f} ms/call")  # fmt: skip
                return
            spy = subprocess.Popen(
                ["py-spy", "record", "--pid", str(pid), "-r", str(args.rate), "-d",
                 str(int(args.seconds) + 1), "-f", args.format, "-o", args.output,
                 *(["--threads"] if args.threads else []), *(["--gil"] if args.gil else []),
                 *(["--native"] if args.native else [])],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
            await asyncio.sleep(0.5)
            n = await _drive(peers, args.load, args.seconds)
            print(f"{args.load}: {n} calls in {args.seconds:.0f} s ({n / args.seconds:.0f}/s)")
            spy.wait()
        finally:
            await peers.aclose()


def main() -> None:
    """Parse arguments and profile."""
    p = argparse.ArgumentParser(prog="python -m bench.profile_router", description=__doc__)
    p.add_argument("load", choices=LOADS)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    p.add_argument("--format", default="flamegraph", choices=("flamegraph", "raw", "speedscope"))
    p.add_argument("--output", default="prof.svg")
    p.add_argument("--threads", action="store_true", help="one stack root per thread")
    p.add_argument("--gil", action="store_true", help="sample only the thread holding the GIL")
    p.add_argument("--native", action="store_true", help="include C frames (grpc core, …)")
    p.add_argument("--cpu", action="store_true", help="no py-spy: server CPU ms per call")
    args = p.parse_args()
    if not args.cpu and shutil.which("py-spy") is None:
        sys.exit("py-spy not found: pip install py-spy")
    asyncio.run(_main(args))


if __name__ == "__main__":
    main()
