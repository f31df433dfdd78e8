"""The two wall times of a call, on a real router: `completed.wall_time_ms` covers the
whole call, spawn to exit; the model-facing `Wall time:` line keeps Codex 0.169.0's clock.

* `shell_command` (Codex's classic exec): the clock starts before the spawn, so the line
  covers the process (`sleep 2` → at least 2.0).
* `exec_command` / `write_stdin` (Codex's unified exec): the line is the time spent
  collecting output, which starts after the spawn and the 150 ms early-exit check (spec 05
  §3.3, observed in Codex: `sleep 1` → ≈0.854, a command done within the check → `0.0000`),
  so it is *not* the process runtime and is not asserted against it here; its format is
  (4 decimals).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import grpc
import pytest
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.router_harness import completed, execute, function_item, router_subprocess, turn

UNIFIED = re.compile(r"^Chunk ID: [0-9a-f]{6}\nWall time: (\d+\.\d{4}) seconds\n")
CLASSIC = re.compile(r"^Exit code: \d+\nWall time: ([0-9.]+) seconds\n")


@pytest.fixture(scope="module")
def stub() -> Iterator[router_pb2_grpc.ToolRouterServiceStub]:
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            yield router_pb2_grpc.ToolRouterServiceStub(channel)
        finally:
            channel.close()


def _run(stub: router_pb2_grpc.ToolRouterServiceStub, tool: str, args: dict[str, object],
         call_id: str) -> router_pb2.ExecutionCompleted:  # fmt: skip
    request = router_pb2.ExecuteRequest(
        thread_id="wall-time", turn=turn(), item=function_item(tool, args, call_id)
    )
    return completed(execute(stub, request))


@pytest.mark.slow
def test_exec_command_wall_time_ms_covers_spawn_to_exit(
    stub: router_pb2_grpc.ToolRouterServiceStub,
) -> None:
    slept = _run(
        stub, "exec_command", {"cmd": "sleep 2", "login": False, "yield_time_ms": 10_000}, "e1"
    )
    assert slept.exit_code == 0 and slept.wall_time_ms >= 2_000, slept
    line = UNIFIED.match(slept.output_text)
    assert line is not None and float(line[1]) > 0, slept.output_text
    failed = _run(stub, "exec_command", {"cmd": "false", "login": False}, "e2")
    assert failed.exit_code == 1 and failed.wall_time_ms > 0, failed
    assert UNIFIED.match(failed.output_text), failed.output_text


@pytest.mark.slow
def test_shell_command_wall_time_line_covers_the_process(
    stub: router_pb2_grpc.ToolRouterServiceStub,
) -> None:
    slept = _run(stub, "shell_command", {"command": "sleep 2", "login": False}, "s1")
    line = CLASSIC.match(slept.output_text)
    assert line is not None and float(line[1]) >= 2.0, slept.output_text
    assert slept.wall_time_ms >= 2_000
    failed = _run(stub, "shell_command", {"command": "false", "login": False}, "s2")
    assert failed.exit_code == 1 and failed.wall_time_ms > 0, failed
