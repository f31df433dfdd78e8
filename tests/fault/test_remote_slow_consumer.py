"""A flood through a remote environment to consumers that stop reading: memory stays bounded,
and every byte arrives afterwards (back-pressure holds the process while they stall)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.common.process.base import SpawnRequest
from shellgate.common.sandbox import SandboxSpec
from shellgate.router.runtime.environments.remote.config import DialSettings
from shellgate.router.runtime.environments.remote.environment import (
    RemoteConfig,
    RemoteEnvironment,
    RemoteProcess,
)
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.execserver_harness import Daemon, daemon_subprocess
from tests.router_harness import function_item, router_subprocess, turn

MIB = 1024 * 1024
FLOOD_BYTES = 200 * MIB
# `yes` output cut at an exact size, so every byte can be accounted for.
FLOOD = f"yes | head -c {FLOOD_BYTES}"
STALL_S = 3.0
# The Execute stream's output budget (runtime/call/stream.MAX_QUEUED_OUTPUT_BYTES) is what
# may wait for a stalled client; while it stalls the router must stay within tens of MiB of
# that, far below what an unpaced `yes` would push at it in STALL_S (the whole flood):
# +13–17 MiB measured, alone or beside three busy cores.
ROUTER_STALL_GROWTH_KIB = 64 * 1024
# Once the client drains, 200 MiB pass through the router's heap in chunks, and what glibc
# keeps of that depends on the load, not on buffering: +28–30 MiB alone, +31–56 MiB beside
# three busy cores, +98 MiB once in CI under three pytest-xdist workers. Still below the
# flood itself, which a router holding the whole output would exceed.
ROUTER_GROWTH_KIB = 160 * 1024
DROP_LOG = re.compile(r"call (\S+): (\d+) output bytes in (\d+) chunks not streamed")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def daemon() -> Iterator[Daemon]:
    """A loopback daemon subprocess (default: an attached stream is never given up on)."""
    with daemon_subprocess(["--insecure", "--log-level", "WARNING"]) as running:
        yield running


def _remote_config(daemon: Daemon) -> RemoteConfig:
    dial = DialSettings(connect_timeout_ms=5_000, call_timeout_ms=10_000)
    return RemoteConfig("box", daemon.target, dial=dial)


@pytest.mark.slow
def test_a_stalled_remote_output_consumer_holds_the_process_back_and_loses_nothing(
    daemon: Daemon,
) -> None:
    async def main() -> None:
        remote = RemoteEnvironment(_remote_config(daemon), client_env=dict(os.environ))
        try:
            request = SpawnRequest(("sh", "-c", FLOOD), "/tmp", dict(os.environ))
            spawned = await remote.spawn(request, SandboxSpec(), detach=False, owner="t")
            handle = spawned.handle
            assert isinstance(handle, RemoteProcess)
            output = handle.output()
            first = await anext(output)
            received = len(first.data)
            # Read nothing for a while: the router-side buffer stays within its bound, and
            # the process waits for us instead of running ahead.
            peak = 0
            deadline = time.monotonic() + STALL_S
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                peak = max(peak, handle.buffered_bytes)
            bound = remote.config.output_buffer_bytes
            assert 0 < peak <= bound, peak
            exit_task = asyncio.ensure_future(handle.wait())
            await asyncio.sleep(0)
            assert not exit_task.done(), "the flood ran to its end while nobody read it"
            async for chunk in output:
                received += len(chunk.data)
                assert handle.buffered_bytes <= bound
            status = await asyncio.wait_for(exit_task, 60)
            assert status.code == 0 and status.environment_lost is None
            assert received == FLOOD_BYTES  # nothing lost while back-pressure held
            await handle.terminate()
        finally:
            await remote.aclose()

    asyncio.run(main())


def _stderr_lines(pipe: object, into: list[str]) -> threading.Thread:
    """Collect a subprocess's stderr in a thread (a full pipe would block the router)."""

    def pump() -> None:
        for line in iter(pipe.readline, b""):  # type: ignore[attr-defined]
            into.append(line.decode(errors="replace"))

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_remote_flood_to_a_stalled_execute_client_keeps_router_memory_bounded(
    daemon: Daemon, tmp_path: Path
) -> None:
    config = tmp_path / "router.toml"
    config.write_text(
        f'[[environments]]\nenvironment_id = "box"\ntarget = "{daemon.target}"\n'
        "connect_timeout_ms = 5000\ncall_timeout_ms = 10000\n"
    )
    logs: list[str] = []
    args = ["--config", str(config), "--log-level", "INFO"]
    with (
        router_subprocess(args) as (proc, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        reader = _stderr_lines(proc.stderr, logs)
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        args_json = {"cmd": FLOOD, "login": False, "yield_time_ms": 120_000}
        request = router_pb2.ExecuteRequest(
            thread_id="flood",
            turn=turn(environment_id="box", cwd="/tmp"),
            item=function_item("exec_command", args_json, "flood-1"),
        )
        stream = stub.Execute(request, timeout=300)
        assert next(stream).WhichOneof("event") == "projection"
        baseline = peak = _rss_kib(proc.pid)
        # Read nothing: the router must not buffer the flood for us.
        deadline = time.monotonic() + STALL_S
        while time.monotonic() < deadline:
            time.sleep(0.1)
            peak = max(peak, _rss_kib(proc.pid))
        stall_peak = peak
        received = 0
        seqs: list[int] = []
        done = None
        for event in stream:
            kind = event.WhichOneof("event")
            if kind == "output":
                data = event.output.data
                received += len(data)
                seqs.append(event.output.seq)
                # Whole chunks of the flood, in order: "y\n" repeated, split anywhere.
                assert data.replace(b"y", b"").replace(b"\n", b"") == b""
            elif kind == "completed":
                done = event.completed
            if len(seqs) % 64 == 0:
                peak = max(peak, _rss_kib(proc.pid))
        peak = max(peak, _rss_kib(proc.pid))
        assert done is not None and done.exit_code == 0
        assert done.original_token_count == FLOOD_BYTES // 4  # the model's count is whole
        proc.terminate()
        proc.wait(15)
        reader.join(10)
    print("router rss kib baseline", baseline, "stalled", stall_peak, "peak", peak,
          "streamed bytes", received)  # fmt: skip
    assert stall_peak - baseline < ROUTER_STALL_GROWTH_KIB, (baseline, stall_peak)
    assert peak - baseline < ROUTER_GROWTH_KIB, (baseline, peak)
    # The client was attached for the whole call: its stall held the process back (router
    # pacing → gRPC flow control → the daemon's pacer → the pipe), nothing was dropped.
    drops = [m.groups() for line in logs if (m := DROP_LOG.search(line))]
    assert drops == [], logs[-20:]
    assert received == FLOOD_BYTES
    assert seqs == list(range(1, len(seqs) + 1))
