"""shellgate ExecService client: one Start stream per run, timed like the other peers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import exec_pb2_grpc as pb_grpc

from bench.clients.common import RunTimes, finish_in_background

CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 128 * 1024 * 1024)]


@contextlib.asynccontextmanager
async def exec_stub(target: str) -> AsyncIterator[Any]:
    """An ExecService stub on a fresh loopback channel, ready before it is returned."""
    channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
    try:
        await channel.channel_ready()
        yield pb_grpc.ExecServiceStub(channel)
    finally:
        await channel.close(None)


def start_request(argv: Sequence[str], env: Mapping[str, str], cwd: str, **kw: Any) -> Any:
    """A StartRequest whose child gets exactly env (no env policy, spec 05 §5.5)."""
    return pb.StartRequest(argv=list(argv), env=dict(env), cwd=cwd, **kw)


async def run(stub: Any, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> RunTimes:
    """Start argv and follow its stream to `closed`; count output bytes."""
    t0 = time.perf_counter()
    exited = 0.0
    code: int | None = None
    nbytes = 0
    call = stub.Start(start_request(argv, env, cwd))
    async for message in call:
        event = message.event
        kind = event.WhichOneof("event")
        if kind == "output":
            nbytes += len(event.output.data)
        elif kind == "exited":
            exited = time.perf_counter() - t0
            code = event.exited.status.code
        elif kind == "closed":
            finish_in_background(call)
            break
        elif kind in ("spawn_failed", "lost"):
            raise RuntimeError(f"shellgate Start: {event}")
    return RunTimes(exited, time.perf_counter() - t0, nbytes, code)
