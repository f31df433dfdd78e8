"""An attached reader that stalls, then reads everything, loses nothing; a detached one past
retention still gets a gap (docs/limits.md, "Slow readers").

The stalls are longer than the exec-server's old 2 s give-up bound, and the outputs far
larger than gRPC's flow-control windows, retention and the pipes together, so only
back-pressure (the process waiting for the reader) can deliver every byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from shellgate.v1 import common_pb2, exec_pb2, router_pb2, router_pb2_grpc

from tests.execserver_harness import daemon_subprocess, exec_stub, start_request
from tests.router_harness import function_item, router_subprocess, running_router, turn

MIB = 1024 * 1024
# Unique fixed-width lines (7 digits + newline): a lost or repeated chunk changes the digest.
DAEMON_LINES = 8 * MIB  # 64 MiB
# The router streams at most 10 000 output deltas per classic call (spec 05 §1.2); seq's
# 4 KiB writes keep 32 MiB within that even if every read takes a single write.
ROUTER_LINES = 4 * MIB  # 32 MiB
STALL_S = 2.5
SHELL_COMMAND = common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND


def _pattern(lines: int) -> list[str]:
    """`seq -w 1 N`: N lines zero-padded to N's width (8 bytes each for these N)."""
    return ["seq", "-w", "1", str(lines)]


def _expected(lines: int) -> tuple[int, str]:
    """Size and sha256 of the pattern, produced by the same command outside shellgate."""
    data = subprocess.run(_pattern(lines), capture_output=True, check=True).stdout
    return len(data), hashlib.sha256(data).hexdigest()


def test_a_stalled_start_stream_loses_nothing_and_holds_the_process_back() -> None:
    size, digest = _expected(DAEMON_LINES)

    async def main(target: str) -> None:
        async with exec_stub(target) as stub:
            call = stub.Start(start_request(_pattern(DAEMON_LINES)))
            first = await call.read()
            process_id = first.event.started.process_id
            await asyncio.sleep(STALL_S)
            listed = await stub.List(exec_pb2.ListRequest())
            (state,) = [p.state for p in listed.processes if p.process_id == process_id]
            # Back-pressure, not buffering: the writer is still blocked on its pipe.
            assert state == exec_pb2.PROCESS_STATE_RUNNING
            sha, received, kinds = hashlib.sha256(), 0, set()
            async with asyncio.timeout(120):
                while (message := await call.read()) is not grpc.aio.EOF:
                    kind = message.event.WhichOneof("event")
                    kinds.add(kind)
                    if kind == "output":
                        sha.update(message.event.output.data)
                        received += len(message.event.output.data)
            assert "gap" not in kinds and "closed" in kinds, kinds
            assert (received, sha.hexdigest()) == (size, digest)

    with daemon_subprocess(["--log-level", "WARNING"]) as daemon:
        asyncio.run(main(daemon.target))


def test_a_detached_process_past_retention_still_reports_a_gap() -> None:
    produced = 8 * MIB

    async def main(target: str) -> None:
        async with exec_stub(target) as stub:
            request = start_request(["head", "-c", str(produced), "/dev/zero"], detach=True)
            call = stub.Start(request)
            process_id = (await call.read()).event.started.process_id
            call.cancel()  # detached: nobody is attached while it runs
            async with asyncio.timeout(30):
                while True:
                    listed = await stub.List(exec_pb2.ListRequest())
                    states = [p.state for p in listed.processes if p.process_id == process_id]
                    if states == [exec_pb2.PROCESS_STATE_CLOSED]:
                        break
                    await asyncio.sleep(0.05)
            attach = stub.Attach(exec_pb2.AttachRequest(process_id=process_id))
            events = [m.event async for m in attach]
            gaps = [e.gap for e in events if e.WhichOneof("event") == "gap"]
            received = sum(len(e.output.data) for e in events if e.WhichOneof("event") == "output")
            assert gaps and gaps[0].reason == exec_pb2.GAP_REASON_EVICTED and gaps[0].first_seq == 1
            assert 0 < received <= 2 * MIB  # what retention kept (1 MiB, whole chunks)
            assert events[-1].WhichOneof("event") == "closed"

    with daemon_subprocess(["--log-level", "WARNING"]) as daemon:
        asyncio.run(main(daemon.target))


def _stalled_execute(stub: Any, environment_id: str, tool: str, lines: int) -> None:
    """A command whose Execute client stalls, then reads all; every byte arrives."""
    size, digest = _expected(lines)
    command = " ".join(_pattern(lines))
    if tool == "shell_command":
        args: dict[str, Any] = {"command": command, "login": False, "timeout_ms": 120_000}
    else:  # exec_command: a yield longer than the command keeps the client attached
        args = {"cmd": command, "login": False, "yield_time_ms": 120_000}
    request = router_pb2.ExecuteRequest(
        thread_id=f"stall-{environment_id}-{tool}",
        turn=turn(shell_tool=SHELL_COMMAND, environment_id=environment_id, cwd="/tmp"),
        item=function_item(tool, args),
    )
    stream = stub.Execute(request, timeout=180)
    assert next(stream).WhichOneof("event") == "projection"
    time.sleep(STALL_S)
    sha, received, kinds, done = hashlib.sha256(), 0, set(), None
    for event in stream:
        kind = event.WhichOneof("event")
        kinds.add(kind)
        if kind == "output":
            sha.update(event.output.data)
            received += len(event.output.data)
        elif kind == "completed":
            done = event.completed
    assert done is not None and done.exit_code == 0, kinds
    assert (received, sha.hexdigest()) == (size, digest)


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["shell_command", "exec_command"])
def test_a_stalled_execute_client_of_the_embedded_environment_loses_nothing(tool: str) -> None:
    with running_router() as router:
        _stalled_execute(router.stub, "local", tool, ROUTER_LINES)


@pytest.mark.slow
def test_a_stalled_execute_client_of_a_remote_environment_loses_nothing(tmp_path: Path) -> None:
    with daemon_subprocess(["--log-level", "WARNING"]) as daemon:
        config = tmp_path / "router.toml"
        config.write_text(
            f'[[environments]]\nenvironment_id = "box"\ntarget = "{daemon.target}"\n'
            "connect_timeout_ms = 5000\ncall_timeout_ms = 10000\n"
        )
        with (
            router_subprocess(["--config", str(config), "--log-level", "WARNING"]) as (_, port),
            grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
        ):
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            # Remote environments serve unified exec (direct mode).
            _stalled_execute(stub, "box", "exec_command", ROUTER_LINES)
