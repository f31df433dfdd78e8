"""SIGTERM to each daemon while calls are in flight: short calls finish, long ones end with
a clear outcome, the daemon exits 0 and no process survives."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import grpc
import grpc.aio
import pytest
from shellgate.v1 import exec_pb2_grpc, router_pb2, router_pb2_grpc

from tests.conftest import marked_pids
from tests.execserver_harness import daemon_subprocess, start_request
from tests.load.loadgen import project_request
from tests.router_harness import function_item, router_subprocess, turn
from tests.waiting import eventually

CLEAR_CODES = {"UNAVAILABLE", "CANCELLED"}


def _router_execute(command: str, i: int) -> router_pb2.ExecuteRequest:
    return router_pb2.ExecuteRequest(
        thread_id=f"term{i}",
        turn=turn(),
        item=function_item(
            "exec_command", {"cmd": command, "login": False, "yield_time_ms": 30_000}, f"c{i}"
        ),
    )


async def _drain(call: Any) -> tuple[str, Any]:
    """Read a stream to its end: ("OK", last message) or (status code name, None)."""
    last = None
    try:
        while (message := await call.read()) is not grpc.aio.EOF:  # type: ignore[attr-defined]
            last = message
    except grpc.aio.AioRpcError as exc:
        return exc.code().name, None
    return "OK", last


@pytest.mark.slow
def test_router_sigterm_during_load(orphan_sweep: str) -> None:
    with router_subprocess(["--log-level", "WARNING"]) as (proc, port):

        async def main() -> tuple[list[tuple[str, Any]], tuple[str, Any], list[str]]:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = router_pb2_grpc.ToolRouterServiceStub(channel)
                short = [stub.Execute(_router_execute("sleep 1; echo done", i)) for i in range(8)]
                long = stub.Execute(_router_execute("sleep 60", 99))
                for call in [*short, long]:
                    while (await call.read()).WhichOneof("event") != "started":
                        pass
                projects = [stub.Project(project_request(i), timeout=30) for i in range(50)]
                proc.send_signal(signal.SIGTERM)
                results = await asyncio.wait_for(
                    asyncio.gather(*(_drain(c) for c in short)), timeout=30
                )
                long_result = await asyncio.wait_for(_drain(long), timeout=30)
                codes = []
                for p in projects:
                    try:
                        await p
                        codes.append("OK")
                    except grpc.aio.AioRpcError as exc:
                        codes.append(exc.code().name)
                return results, long_result, codes

        short, long, project_codes = asyncio.run(main())
        assert proc.wait(20) == 0
    # Calls that fit in the shutdown grace period finish normally.
    for code, last in short:
        assert code == "OK", code
        assert last.completed.exit_code == 0 and last.completed.output_text.endswith("done\n")
    # The long one ends with a paired `completed` or a clear status, never a hang.
    code, last = long
    assert code in CLEAR_CODES or last.WhichOneof("event") == "completed", (code, last)
    assert set(project_codes) <= {"OK"} | CLEAR_CODES, project_codes
    eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)


@pytest.mark.slow
def test_execserver_sigterm_during_load(orphan_sweep: str) -> None:
    with daemon_subprocess(["--log-level", "WARNING"]) as daemon:

        async def main() -> tuple[list[tuple[str, Any]], tuple[str, Any]]:
            async with grpc.aio.insecure_channel(daemon.target) as channel:
                stub = exec_pb2_grpc.ExecServiceStub(channel)
                short = [
                    stub.Start(start_request(["sh", "-c", "sleep 1; echo done"])) for _ in range(8)
                ]
                long = stub.Start(start_request(["sleep", "60"]))
                for call in [*short, long]:
                    assert (await call.read()).event.WhichOneof("event") == "started"
                daemon.proc.send_signal(signal.SIGTERM)
                results = await asyncio.wait_for(
                    asyncio.gather(*(_drain(c) for c in short)), timeout=30
                )
                return results, await asyncio.wait_for(_drain(long), timeout=30)

        short, long = asyncio.run(main())
        assert daemon.proc.wait(20) == 0
    for code, last in short:
        # A short process either finished (closed) or was ended by the drain (clear status).
        assert code in CLEAR_CODES or last.event.WhichOneof("event") == "closed", (code, last)
    code, last = long
    assert code in CLEAR_CODES or last.event.WhichOneof("event") == "closed", (code, last)
    eventually(lambda: not marked_pids(orphan_sweep), "every marked process gone", 5.0)
