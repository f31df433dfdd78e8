"""ToolRouterService client pieces: the benchmark turn, Project, Execute, health Check."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from bench.clients.common import RunTimes, finish_in_background

THREAD = "bench"


def turn(cwd: str, environment: str = "local") -> Any:
    """One environment (the embedded `local` one by default) at cwd; never ask, no sandbox
    (like the peers)."""
    return common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id=environment, cwd=cwd)],
        approval_policy=common_pb2.ApprovalPolicy(kind=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        permission_profile=common_pb2.PermissionProfile(
            kind=common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS),
    )  # fmt: skip


_CALL_NUMBERS = itertools.count(1)


def shell_item(command: str, call_id: str = "call_bench") -> str:
    """A `shell_command` function call with `login: false` (no rc files, like `bash -c`)."""
    args = json.dumps({"command": command, "login": False})
    return json.dumps({"type": "function_call", "name": "shell_command", "arguments": args,
                       "call_id": call_id})  # fmt: skip


def exec_item(command: str, call_id: str = "call_bench") -> str:
    """An `exec_command` call with `login: false`: the shell tool Codex offers for a remote
    environment (`shell_command` is registered only for a single local one)."""
    args = json.dumps({"cmd": command, "login": False})
    return json.dumps({"type": "function_call", "name": "exec_command", "arguments": args,
                       "call_id": call_id})  # fmt: skip


def stubs(channel: Any) -> tuple[Any, Any]:
    """ToolRouterService and Health stubs on one channel."""
    return router_pb2_grpc.ToolRouterServiceStub(channel), health_pb2_grpc.HealthStub(channel)


def project_request(item: str, turn_pb: Any) -> Any:
    """A ProjectRequest for one raw item."""
    return router_pb2.ProjectRequest(thread_id=THREAD, turn=turn_pb,
                                     item=common_pb2.ToolCallItem(raw_json=item))  # fmt: skip


def health_request() -> Any:
    """The empty unary RPC: overall health."""
    return health_pb2.HealthCheckRequest(service="")


def _request(item: str, turn_pb: Any, coalesce_ms: int = 0) -> Any:
    # A fresh call_id per Execute: the router answers a repeated one as a retry of the
    # first call (its stored result) instead of running it again.
    raw = json.loads(item)
    raw["call_id"] = f"{raw.get('call_id', 'call')}-{next(_CALL_NUMBERS)}"
    return router_pb2.ExecuteRequest(
        thread_id=THREAD, turn=turn_pb, item=common_pb2.ToolCallItem(raw_json=json.dumps(raw)),
        coalesce_ms=coalesce_ms,
    )  # fmt: skip


def _check_completed(done: Any) -> int | None:
    if done.termination != router_pb2.TERMINATION_REASON_EXITED:
        raise RuntimeError(f"router Execute ended with {done.termination}: "
                           f"{done.output_text[:300]}")  # fmt: skip
    return done.exit_code if done.HasField("exit_code") else None


async def execute(stub: Any, item: str, turn_pb: Any, coalesce_ms: int = 0) -> RunTimes:
    """Execute one item; time to `completed`, output bytes seen on the stream.

    Timed to the `completed` event, which carries the tool output the harness needs (like
    the ExecService client, timed to `closed`); the stream's trailing status follows it.
    `coalesce_ms` > 0 asks for the coalesced stream (events arrive in `batch` messages).
    """
    request = _request(item, turn_pb, coalesce_ms)
    t0 = time.perf_counter()
    nbytes = 0
    code: int | None = None
    call = stub.Execute(request)
    async for message in call:
        kind = message.WhichOneof("event")
        events = message.batch.events if kind == "batch" else (message,)
        done = None
        for event in events:
            kind = event.WhichOneof("event")
            if kind == "output":
                nbytes += len(event.output.data)
            elif kind == "completed":
                done = event.completed
            elif kind == "approval_required":
                raise RuntimeError("router asked for approval (turn should say never)")
        if done is not None:
            code = _check_completed(done)
            finish_in_background(call)
            break
    t = time.perf_counter() - t0
    return RunTimes(t, t, nbytes, code)


async def execute_once(stub: Any, item: str, turn_pb: Any) -> RunTimes:
    """ExecuteOnce of one item (unary): time to the reply, which ends in `completed`."""
    request = _request(item, turn_pb)
    t0 = time.perf_counter()
    reply = await stub.ExecuteOnce(router_pb2.ExecuteOnceRequest(request=request))
    t = time.perf_counter() - t0
    last = reply.events[-1]
    if last.WhichOneof("event") != "completed":
        raise RuntimeError(f"router ExecuteOnce ended with {last.WhichOneof('event')}")
    code = _check_completed(last.completed)
    return RunTimes(t, t, len(last.completed.output_text), code)
