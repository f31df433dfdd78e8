"""Router test harness: an in-process router on 127.0.0.1:0 (own loop thread) or a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

import grpc
from shellgate.router.service.config import Limits, RouterConfig
from shellgate.router.service.server import RunningRouter, start_router
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc, shell_pb2

from tests.child import stop_child
from tests.nofile import nofile_prefix

# Let the whole environment through so the orphan sweep's marker reaches every child.
INHERIT_ALL = shell_pb2.ShellEnvironmentPolicy(inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL)


def router_config(**overrides: Any) -> RouterConfig:
    """A loopback router config with short grace periods."""
    base = RouterConfig(
        listen="127.0.0.1:0", limits=Limits(shutdown_grace_ms=1_000), local_token=False
    )
    return replace(base, **overrides)


@dataclass
class Router:
    """A running in-process router and a channel to it."""

    running: RunningRouter
    loop: asyncio.AbstractEventLoop
    channel: grpc.Channel

    @property
    def port(self) -> int:
        """The bound port."""
        return self.running.port

    @property
    def stub(self) -> router_pb2_grpc.ToolRouterServiceStub:
        """A sync stub."""
        return router_pb2_grpc.ToolRouterServiceStub(self.channel)

    def call(self, coro: Any) -> Any:
        """Run a coroutine on the router's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)


@contextlib.contextmanager
def running_router(config: RouterConfig | None = None) -> Iterator[Router]:
    """Start a router in a background event-loop thread; stop it (killing processes) after."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    started: Future[RunningRouter] = asyncio.run_coroutine_threadsafe(
        start_router(config or router_config()), loop
    )
    running = started.result(30)
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield Router(running, loop, channel)
    finally:
        channel.close()
        asyncio.run_coroutine_threadsafe(running.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def turn(
    *,
    shell_tool: int = common_pb2.MODEL_SHELL_TOOL_TYPE_UNSPECIFIED,
    approval: int = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST,
    profile: int = common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
    cwd: str = "",
    environment_id: str = "local",
    **extra: Any,
) -> common_pb2.TurnContext:
    """A turn for tests: full access unless asked, env policy inherits everything."""
    ctx = common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id=environment_id, cwd=cwd)],
        approval_policy=common_pb2.ApprovalPolicy(kind=approval),
        permission_profile=common_pb2.PermissionProfile(kind=profile),
        shell_environment_policy=INHERIT_ALL,
        shell_tool_type=shell_tool,
        **extra,
    )
    return ctx


def function_item(
    name: str, arguments: dict[str, Any] | str, call_id: str = "c1"
) -> common_pb2.ToolCallItem:
    """A raw function_call item."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    raw = json.dumps({"type": "function_call", "name": name, "arguments": args, "call_id": call_id})
    return common_pb2.ToolCallItem(raw_json=raw)


# How `execute` calls the router: the v1 stream (one event per message), the coalesced
# stream (ExecuteRequest.coalesce_ms, events in `batch` messages) or unary ExecuteOnce.
# Tests parametrized over EXECUTE_MODES set it through the `any_execute_mode` fixture
# (tests/integration/conftest.py).
EXECUTE_MODES = ("stream", "coalesced", "once")
execute_mode = "stream"
COALESCE_MS = 50


def execute(
    stub: router_pb2_grpc.ToolRouterServiceStub, request: router_pb2.ExecuteRequest
) -> list[router_pb2.ExecuteResponse]:
    """All events of one Execute call, one per event whatever the mode (`execute_mode`):
    a coalesced stream's batches are flattened; ExecuteOnce's reply has no `output` and no
    `approval_waiting` events."""
    if execute_mode == "once":
        once = router_pb2.ExecuteOnceRequest(request=request)
        return list(stub.ExecuteOnce(once, timeout=60).events)
    if execute_mode == "stream":
        return list(stub.Execute(request, timeout=60))
    coalesced = router_pb2.ExecuteRequest()
    coalesced.CopyFrom(request)
    coalesced.coalesce_ms = COALESCE_MS
    events: list[router_pb2.ExecuteResponse] = []
    for message in stub.Execute(coalesced, timeout=60):
        if message.WhichOneof("event") == "batch":
            assert len(message.batch.events) > 1, "a batch of one is sent as the event"
            assert all(e.WhichOneof("event") != "batch" for e in message.batch.events)
            events.extend(message.batch.events)
        else:
            events.append(message)
    return events


def completed(events: Sequence[router_pb2.ExecuteResponse]) -> router_pb2.ExecutionCompleted:
    """The single completed event (asserts there is exactly one, last)."""
    done = [e.completed for e in events if e.WhichOneof("event") == "completed"]
    assert len(done) == 1, [e.WhichOneof("event") for e in events]
    assert events[-1].WhichOneof("event") == "completed"
    return done[0]


@contextlib.contextmanager
def router_subprocess(
    extra_args: Sequence[str] = (),
    timeout_s: float = 20.0,
    *,
    local_token: bool = False,
    wrapper: Sequence[str] = (),
    nofile: int | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`shellgate serve --listen 127.0.0.1:0 --print-port` as a child; SIGTERM on exit.

    Without `local_token` the child trusts local callers (`--no-local-token`), so tests can
    use bare stubs; the default's generated token is tested on its own. `wrapper` is a
    command that execs the router as its last arguments (e.g. into a mount namespace).
    """
    args = [*wrapper, *nofile_prefix(nofile), sys.executable, "-m",
            "shellgate.router.cli.main", "serve", "--listen", "127.0.0.1:0", "--print-port",
            *extra_args]  # fmt: skip
    if not local_token:
        args.append("--no-local-token")
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        if not ready:
            raise RuntimeError("router did not print its port")
        line = proc.stdout.readline().decode().strip()
        if not line.isdigit():
            raise RuntimeError(
                f"router failed to start: {line!r} {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        yield proc, int(line)
    finally:
        stop_child(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
