"""The bench's grpc-aio floor streams the same event kinds, in the same order, as the real servers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2
from shellgate.v1 import common_pb2, router_pb2

from bench import procs
from bench.clients import router, sg_exec
from bench.peers import Peers

EXECUTE_COMMANDS = ("echo hi", "echo oops >&2; exit 3")


async def _start_kinds(address: str, argv: list[str], env: dict[str, str], cwd: str) -> list[str]:
    async with sg_exec.exec_stub(address) as stub:
        call = stub.Start(sg_exec.start_request(argv, env, cwd))
        return [str(m.event.WhichOneof("event")) async for m in call]


async def _execute(address: str, command: str, call_id: str, cwd: str) -> list[Any]:
    raw = json.loads(router.shell_item(command, call_id))
    request = router_pb2.ExecuteRequest(
        thread_id=router.THREAD, turn=router.turn(cwd),
        item=common_pb2.ToolCallItem(raw_json=json.dumps(raw)),
    )  # fmt: skip
    async with grpc.aio.insecure_channel(address) as channel:
        stub, _ = router.stubs(channel)
        return [m async for m in stub.Execute(request)]


def _kinds(messages: list[Any]) -> list[str]:
    return [str(m.WhichOneof("event")) for m in messages]


async def _compare(home: str) -> None:
    peers = Peers(home)
    try:
        daemon, real_router, floor = peers.daemon(), peers.router(), peers.floor()
        for argv in (["true"], ["echo", "hi"]):
            real = await _start_kinds(daemon.address, argv, peers.env, home)
            mirror = await _start_kinds(floor.address, argv, peers.env, home)
            assert real[0] == "started" and real[-1] == "closed", real
            assert mirror == real, (argv, mirror, real)
        for i, command in enumerate(EXECUTE_COMMANDS):
            real_msgs = await _execute(real_router.address, command, f"real-{i}", home)
            mirror_msgs = await _execute(floor.address, command, f"floor-{i}", home)
            assert _kinds(real_msgs)[0] == "projection", _kinds(real_msgs)
            assert _kinds(mirror_msgs) == _kinds(real_msgs), (command, mirror_msgs, real_msgs)
            real_done, mirror_done = real_msgs[-1].completed, mirror_msgs[-1].completed
            assert mirror_done.exit_code == real_done.exit_code
            assert mirror_done.termination == real_done.termination
            assert mirror_msgs[0].projection.call_id == f"floor-{i}"
            output = [m.output for m in mirror_msgs if m.HasField("output")]
            assert [(o.stream, o.data) for o in output] == [
                (o.stream, o.data) for m in real_msgs if m.HasField("output") for o in [m.output]
            ]
        async with grpc.aio.insecure_channel(floor.address) as channel:
            _, health = router.stubs(channel)
            reply = await health.Check(router.health_request())
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await peers.aclose()


@pytest.mark.slow
def test_floor_mirrors_the_daemon_and_the_router() -> None:
    with procs.scratch_home() as home:
        asyncio.run(asyncio.wait_for(_compare(home), timeout=60))
