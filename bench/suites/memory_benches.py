"""Daemon memory: a slow consumer of a huge output, and many idle PTY sessions."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from shellgate.v1 import exec_pb2 as pb

from bench.clients import sg_exec
from bench.core import MIB, Mode, Result
from bench.peers import Peers
from bench.procs import rss_kib

RSS_POLL_S = 0.05
SETTLE_S = 1.0
# The slow consumer takes one message every this many seconds.
SLOW_READ_PAUSE_S = 0.01
START_PARALLELISM = 32


def _settle(mode: Mode) -> float:
    # Smoke runs only prove the plumbing; they need no settled allocator.
    return 0.2 if mode.name == "smoke" else SETTLE_S


async def _sample_rss(pid: int, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], rss_kib(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), RSS_POLL_S)


async def bench_slow_consumer(peers: Peers, mode: Mode) -> Result:
    """Stream N bytes to a consumer that reads one message every 10 ms; daemon RSS growth."""
    n = mode.slow_consumer_bytes
    res = Result("slow_consumer", f"{n // MIB} MiB to a slow consumer",
                 "every byte delivered, no gap; daemon RSS growth ≤ 32 MiB", unit="MiB")  # fmt: skip
    server = peers.daemon("daemon-mem")
    try:
        stub = await peers.enter_async(sg_exec.exec_stub(server.address))
        await sg_exec.run(stub, ["true"], peers.env, peers.home)  # warm the daemon's paths
        await asyncio.sleep(_settle(mode))
        baseline = rss_kib(server.pid)
        peak, stop = [baseline], asyncio.Event()
        sampler = asyncio.create_task(_sample_rss(server.pid, peak, stop))
        t0 = time.perf_counter()
        delivered = messages = gaps = 0
        finished = False
        call = stub.Start(sg_exec.start_request(["head", "-c", str(n), "/dev/zero"],
                                                peers.env, peers.home))  # fmt: skip
        try:
            async for message in call:
                kind = message.event.WhichOneof("event")
                messages += 1
                if kind == "output":
                    delivered += len(message.event.output.data)
                elif kind == "gap":
                    gaps += 1
                elif kind == "closed":
                    finished = True
                    break
                if time.perf_counter() - t0 > mode.max_seconds * 4:
                    break  # bounded: the verdict still holds for what was seen
                await asyncio.sleep(SLOW_READ_PAUSE_S)
        finally:
            call.cancel()
            stop.set()
            await sampler
    finally:
        peers.stop("daemon-mem")
    growth = (peak[0] - baseline) / 1024
    res.add("shellgate", [growth])
    res.metrics = {"baseline_rss_mib": baseline / 1024, "peak_rss_mib": peak[0] / 1024,
                   "rss_growth_mib": growth, "delivered_mib": delivered / MIB,
                   "messages": messages, "gap_events": gaps, "stream_finished": finished,
                   "seconds": time.perf_counter() - t0}  # fmt: skip
    # An attached reader never loses a byte: anything short of all of it is a miss.
    res.judge(growth <= 32 and finished and delivered == n and gaps == 0)
    res.note = (
        "consumer sleeps 10 ms after each message; the attached stream holds the process "
        "back (pipe back-pressure), so it must receive every byte with no gap"
    )
    return res


async def bench_idle_pty(peers: Peers, mode: Mode) -> Result:
    """Start N detached PTY `sleep 3600` sessions; daemon RSS growth per session."""
    n = mode.idle_sessions
    res = Result("idle_pty", f"{n} idle PTY sessions", "daemon RSS ≤ 200 KiB per session",
                 unit="KiB/session")  # fmt: skip
    server = peers.daemon("daemon-pty")
    ids: list[str] = []
    try:
        stub = await peers.enter_async(sg_exec.exec_stub(server.address))
        await sg_exec.run(stub, ["true"], peers.env, peers.home)
        await asyncio.sleep(_settle(mode))
        baseline = rss_kib(server.pid)
        gate = asyncio.Semaphore(START_PARALLELISM)

        async def start_one() -> None:
            async with gate:
                req = sg_exec.start_request(["sleep", "3600"], peers.env, peers.home,
                                            tty=True, detach=True)  # fmt: skip
                call: Any = stub.Start(req)
                first = await call.read()
                ids.append(first.event.started.process_id)
                call.cancel()  # detached: the session outlives the stream

        t0 = time.perf_counter()
        await asyncio.gather(*(start_one() for _ in range(n)))
        start_s = time.perf_counter() - t0
        await asyncio.sleep(_settle(mode))
        after = rss_kib(server.pid)
        listed = await stub.List(pb.ListRequest())
        running = sum(1 for p in listed.processes if p.state == pb.PROCESS_STATE_RUNNING)
        t1 = time.perf_counter()

        async def terminate(pid: str) -> None:
            async with gate, asyncio.timeout(30):
                with contextlib.suppress(Exception):
                    await stub.Terminate(pb.TerminateRequest(process_id=pid))

        # Concurrently: one at a time, 1 000 Terminates took minutes (each waits for its group).
        await asyncio.gather(*(terminate(pid) for pid in ids))
        terminate_s = time.perf_counter() - t1
    finally:
        peers.stop("daemon-pty")
    per = (after - baseline) / max(1, n)
    res.add("shellgate", [per])
    res.metrics = {"sessions": n, "running_listed": running, "baseline_rss_mib": baseline / 1024,
                   "after_rss_mib": after / 1024, "kib_per_session": per,
                   "start_all_seconds": start_s, "terminate_all_seconds": terminate_s}  # fmt: skip
    res.judge(per <= 200 and running >= n)
    res.note = "RSS after all sessions started and settled, minus RSS before"
    return res


MEMORY_BENCHES: dict[str, Any] = {
    "slow_consumer": bench_slow_consumer,
    "idle_pty": bench_idle_pty,
}
