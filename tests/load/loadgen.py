"""A bounded load generator for a shellgate router: N concurrent `Project` calls and M
concurrent `Execute` calls (`true`, login false), every call under a deadline.

    python -m tests.load.loadgen --target 127.0.0.1:50051 --project 1000 --execute 200

Against a default local router no token flag is needed: like `shellgate call`, it reads the
token the router generated for a loopback target (`--token` overrides it). Prints one JSON
line (counts, status codes, latency percentiles, wall time) and exits 1 when any call failed. Everything is bounded: the number of calls by the arguments, each call by
--call-timeout-s, the whole run by --total-timeout-s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from shellgate.client.local_token import local_token_for
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc, shell_pb2

MAX_CALLS = 20_000  # a hard ceiling so a typo cannot start an unbounded run


@dataclass
class Result:
    """Outcome of one kind of call: status codes and latencies (ms)."""

    codes: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts and p50/p99/max latency."""
        lat = sorted(self.latencies_ms)

        def pct(p: float) -> float:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 1) if lat else 0.0

        return {
            "calls": len(lat),
            "codes": dict(self.codes),
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "max_ms": round(lat[-1], 1) if lat else 0.0,
        }


def _turn() -> common_pb2.TurnContext:
    return common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id="local")],
        approval_policy=common_pb2.ApprovalPolicy(kind=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        permission_profile=common_pb2.PermissionProfile(
            kind=common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS
        ),
        # Inherit everything so a test harness's marker variable reaches the children.
        shell_environment_policy=shell_pb2.ShellEnvironmentPolicy(
            inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL
        ),
    )


def _item(name: str, arguments: dict[str, Any], call_id: str) -> common_pb2.ToolCallItem:
    raw = {"type": "function_call", "name": name, "arguments": json.dumps(arguments),
           "call_id": call_id}  # fmt: skip
    return common_pb2.ToolCallItem(raw_json=json.dumps(raw))


def project_request(i: int) -> router_pb2.ProjectRequest:
    """The i-th Project request (a few shapes, so the parser does real work)."""
    scripts = ("git status", "ls -la && cat README.md | head", "rm -rf /tmp/x", "echo $(date)")
    return router_pb2.ProjectRequest(
        thread_id=f"load-p{i % 50}",
        turn=_turn(),
        item=_item("exec_command", {"cmd": scripts[i % len(scripts)]}, f"p{i}"),
    )


def execute_request(i: int) -> router_pb2.ExecuteRequest:
    """The i-th Execute request: `true` without a login shell."""
    return router_pb2.ExecuteRequest(
        thread_id=f"load-e{i}",
        turn=_turn(),
        item=_item("exec_command", {"cmd": "true", "login": False}, f"e{i}"),
    )


async def _timed(result: Result, call: Callable[[], Awaitable[None]]) -> None:
    start = time.monotonic()
    try:
        await call()
        result.codes["OK"] += 1
    except grpc.aio.AioRpcError as exc:
        result.codes[exc.code().name] += 1
    result.latencies_ms.append((time.monotonic() - start) * 1000)


async def run_load(
    target: str,
    projects: int,
    executes: int,
    *,
    call_timeout_s: float = 60.0,
    metadata: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Fire every call at once (all in flight together) and wait for all of them."""
    if projects + executes > MAX_CALLS:
        raise ValueError(f"at most {MAX_CALLS} calls per run")
    project_result, execute_result = Result(), Result()
    md = tuple(metadata)
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), 10)
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)

        async def one_project(i: int) -> None:
            reply = await stub.Project(project_request(i), timeout=call_timeout_s, metadata=md)
            if not reply.projection.WhichOneof("outcome"):
                raise RuntimeError("empty projection")

        async def one_execute(i: int) -> None:
            kinds = []
            async for event in stub.Execute(
                execute_request(i), timeout=call_timeout_s, metadata=md
            ):
                kinds.append(event.WhichOneof("event"))
                if kinds[-1] == "completed" and event.completed.exit_code != 0:
                    execute_result.codes["NONZERO_EXIT"] += 1
            if kinds.count("completed") != 1 or kinds[-1] != "completed":
                execute_result.codes["UNPAIRED"] += 1

        start = time.monotonic()
        await asyncio.gather(
            *(_timed(project_result, lambda i=i: one_project(i)) for i in range(projects)),
            *(_timed(execute_result, lambda i=i: one_execute(i)) for i in range(executes)),
        )
        wall_s = time.monotonic() - start
    return {
        "target": target,
        "wall_s": round(wall_s, 2),
        "project": project_result.summary(),
        "execute": execute_result.summary(),
    }


def errors(report: dict[str, Any]) -> int:
    """Number of calls that did not end OK (plus non-zero exits and unpaired streams)."""
    return sum(
        n
        for kind in ("project", "execute")
        for code, n in report[kind]["codes"].items()
        if code != "OK"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m tests.load.loadgen", description=__doc__)
    parser.add_argument("--target", required=True, help="router host:port")
    parser.add_argument("--project", type=int, default=1000, help="concurrent Project calls")
    parser.add_argument("--execute", type=int, default=200, help="concurrent Execute calls")
    parser.add_argument("--call-timeout-s", type=float, default=60.0)
    parser.add_argument("--total-timeout-s", type=float, default=300.0)
    parser.add_argument(
        "--token", help="bearer token (default: the token a local `shellgate serve` generated "
        "for a loopback --target, found as `shellgate call` finds it)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    token = args.token if args.token is not None else local_token_for(args.target)
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    report = asyncio.run(
        asyncio.wait_for(
            run_load(
                args.target, args.project, args.execute,
                call_timeout_s=args.call_timeout_s, metadata=metadata,
            ),
            args.total_timeout_s,
        )
    )  # fmt: skip
    print(json.dumps(report), flush=True)
    return 1 if errors(report) else 0


if __name__ == "__main__":
    sys.exit(main())
