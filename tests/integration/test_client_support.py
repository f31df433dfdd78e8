"""Helpers for the client tests: a canned fake ToolRouterService and a real router process.

The fake runs on a real grpc.aio server (127.0.0.1:0) in its own thread and event loop, so
both the blocking and the asyncio client talk to it over the wire. It holds no tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from shellgate.v1 import common_pb2, projection_pb2, router_pb2, router_pb2_grpc

from tests.conftest import MARKER_VAR

TOKEN = "tok-client-test-5e1d"
SLEEP_ABORT = "aborted by user after 0.5s"


def item_fields(item: common_pb2.ToolCallItem) -> tuple[str, str, dict[str, Any]]:
    """(call_id, name, arguments) of a raw function_call item or a split one."""
    if item.WhichOneof("item") == "split":
        return item.split.call_id, item.split.name, json.loads(item.split.arguments or "{}")
    value = json.loads(item.raw_json)
    args = value.get("arguments") or "{}"
    return value.get("call_id", ""), value.get("name", ""), json.loads(args)


def _completed(call_id: str, text: str, **fields: Any) -> router_pb2.ExecuteResponse:
    item = {"type": "function_call_output", "call_id": call_id, "output": text}
    done = router_pb2.ExecutionCompleted(
        output_item_json=json.dumps(item, separators=(",", ":")), output_text=text, **fields
    )
    return router_pb2.ExecuteResponse(completed=done)


def _output(seq: int, data: bytes) -> router_pb2.ExecuteResponse:
    from shellgate.v1 import exec_pb2

    chunk = router_pb2.ExecutionOutput(stream=exec_pb2.OUTPUT_STREAM_STDOUT, seq=seq, data=data)
    return router_pb2.ExecuteResponse(output=chunk)


@dataclass
class FakeState:
    """What the fake saw, and switches that change its answers."""

    requests: list[tuple[str, Any]] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    require_token: bool = False
    slow_s: float = 0.0
    cancelled_calls: list[str] = field(default_factory=list)
    interrupts: dict[str, asyncio.Event] = field(default_factory=dict)
    pending: dict[str, tuple[str, str]] = field(default_factory=dict)  # approval → (thread, call)
    unavailable_first: int = 0  # answer UNAVAILABLE to this many calls first (retry tests)


class FakeRouter(router_pb2_grpc.ToolRouterServiceServicer):
    """Canned answers keyed on the command text: `echo …`, `ask …`, `sleep …`, `hang …`."""

    def __init__(self, state: FakeState) -> None:
        self.state = state

    async def _enter(self, name: str, request: Any, context: grpc.aio.ServicerContext) -> None:
        self.state.requests.append((name, request))
        metadata = {key: value for key, value in context.invocation_metadata() or ()}
        self.state.metadata.append(metadata)
        if self.state.require_token and metadata.get("authorization") != f"Bearer {TOKEN}":
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")
        if self.state.unavailable_first > 0:
            self.state.unavailable_first -= 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not yet")
        if self.state.slow_s:
            await asyncio.sleep(self.state.slow_s)

    async def ListTools(self, request: Any, context: Any) -> router_pb2.ListToolsResponse:
        await self._enter("ListTools", request, context)
        return router_pb2.ListToolsResponse(tools=[
            router_pb2.ToolSpec(name="exec_command", json='{"type":"function","name":"exec_command"}'),
            router_pb2.ToolSpec(name="shell_command", json='{"type":"function"}', hidden=True),
        ])

    def _projection(self, item: common_pb2.ToolCallItem) -> projection_pb2.Projection:
        call_id, name, args = item_fields(item)
        command = args.get("cmd") or args.get("command") or ""
        handler = projection_pb2.HandlerCommandProjection(
            handler_argv=["/bin/bash", "-lc", command], environment_id="local", cwd="/w"
        )
        return projection_pb2.Projection(
            call_id=call_id, tool_name=name, payload_kind=projection_pb2.PAYLOAD_KIND_FUNCTION,
            shell=projection_pb2.ShellOutcome(elements=[projection_pb2.ShellElement(command=handler)]),
            warnings=["unknown argument `bogus` was ignored"] if "bogus" in args else [],
        )

    async def Project(self, request: Any, context: Any) -> router_pb2.ProjectResponse:
        await self._enter("Project", request, context)
        if not request.thread_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "thread_id: must not be empty")
        return router_pb2.ProjectResponse(projection=self._projection(request.item))

    async def Execute(self, request: Any, context: Any) -> AsyncIterator[router_pb2.ExecuteResponse]:
        await self._enter("Execute", request, context)
        if request.WhichOneof("input") == "resume":
            async for response in self._resume(request, context):
                yield response
            return
        call_id, _, args = item_fields(request.item)
        command = args.get("cmd") or args.get("command") or ""
        yield router_pb2.ExecuteResponse(projection=self._projection(request.item))
        if command.startswith("ask"):
            approval_id = f"appr-{len(self.state.pending) + 1}"
            self.state.pending[approval_id] = (request.thread_id, call_id)
            yield router_pb2.ExecuteResponse(approval_required=router_pb2.ApprovalRequired(
                approval_id=approval_id, call_id=call_id, kind=router_pb2.APPROVAL_KIND_EXEC_POLICY,
                argv=["/bin/bash", "-lc", command], cwd="/w", environment_id="local",
                reason="needs a look", approval_key_digest="ab" * 32,
                proposed_amendment=projection_pb2.ExecPolicyAmendment(prefix=["ask"]),
                available_decisions=[router_pb2.APPROVAL_DECISION_APPROVED,
                                     router_pb2.APPROVAL_DECISION_APPROVED_WITH_AMENDMENT,
                                     router_pb2.APPROVAL_DECISION_DENIED,
                                     router_pb2.APPROVAL_DECISION_ABORT],
                expires_in_ms=600_000,
            ))
            return
        yield router_pb2.ExecuteResponse(started=router_pb2.ExecutionStarted(
            environment_id="local", process_id="p1", pid=4242))
        if command.startswith("hang"):
            # Never interruptible: only cancelling the RPC ends it.
            yield _output(1, b"hanging\n")
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.state.cancelled_calls.append(call_id)
                raise
            return
        if command.startswith("sleep"):
            interrupted = self.state.interrupts.setdefault(call_id, asyncio.Event())
            yield _output(1, b"tick\n")
            try:
                await asyncio.wait_for(interrupted.wait(), timeout=30)
            except asyncio.CancelledError:
                self.state.cancelled_calls.append(call_id)
                raise
            yield _completed(call_id, SLEEP_ABORT, termination=router_pb2.TERMINATION_REASON_CANCELLED,
                             wall_time_ms=500)
            return
        yield _output(1, b"hel")
        yield _output(2, b"lo\n")
        code = int(args.get("exit", 0))
        yield _completed(call_id, f"Exit code: {code}\nOutput:\nhello\n", success=True,
                         exit_code=code, wall_time_ms=12, original_token_count=3,
                         termination=router_pb2.TERMINATION_REASON_EXITED,
                         model_warnings=["a warning"] if "warn" in args else [])

    async def _resume(self, request: Any, context: Any) -> AsyncIterator[router_pb2.ExecuteResponse]:
        key = request.resume.approval_id
        owner = self.state.pending.pop(key, None)
        if owner is None or owner[0] != request.thread_id:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown approval id {key}")
        assert owner is not None
        call_id = owner[1]
        decision = request.resume.decision
        if decision == router_pb2.APPROVAL_DECISION_DENIED:
            yield _completed(call_id, "exec command rejected by user",
                             termination=router_pb2.TERMINATION_REASON_REJECTED)
            return
        if decision == router_pb2.APPROVAL_DECISION_ABORT:
            yield _completed(call_id, "aborted by user after 0.0s",
                             termination=router_pb2.TERMINATION_REASON_CANCELLED)
            return
        yield router_pb2.ExecuteResponse(started=router_pb2.ExecutionStarted(environment_id="local"))
        yield _output(1, b"approved\n")
        yield _completed(call_id, "Exit code: 0\nOutput:\napproved\n", success=True, exit_code=0,
                         termination=router_pb2.TERMINATION_REASON_EXITED)

    async def Interrupt(self, request: Any, context: Any) -> router_pb2.InterruptResponse:
        await self._enter("Interrupt", request, context)
        event = self.state.interrupts.get(request.call_id)
        if event is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no call {request.call_id}")
        assert event is not None
        event.set()
        return router_pb2.InterruptResponse()

    async def EndThread(self, request: Any, context: Any) -> router_pb2.EndThreadResponse:
        await self._enter("EndThread", request, context)
        return router_pb2.EndThreadResponse(terminated_sessions=2, dropped_pending_approvals=1)

    async def ListEnvironments(self, request: Any, context: Any) -> router_pb2.ListEnvironmentsResponse:
        await self._enter("ListEnvironments", request, context)
        from shellgate.v1 import exec_pb2

        return router_pb2.ListEnvironmentsResponse(environments=[
            router_pb2.EnvironmentStatus(environment_id="local", reachable=True,
                                         info=exec_pb2.GetInfoResponse(os="linux")),
            router_pb2.EnvironmentStatus(environment_id="far", remote=True, target="h:1",
                                         last_error="connection refused"),
        ])

    async def ListSessions(self, request: Any, context: Any) -> router_pb2.ListSessionsResponse:
        await self._enter("ListSessions", request, context)
        return router_pb2.ListSessionsResponse(sessions=[
            router_pb2.SessionInfo(session_id=7, environment_id="local", call_id="c7",
                                   argv=["bash", "-lc", "top"], tty=True, running=True),
            router_pb2.SessionInfo(session_id=8, running=False, exit_code=0),
        ])

    async def TerminateSession(self, request: Any, context: Any) -> router_pb2.TerminateSessionResponse:
        await self._enter("TerminateSession", request, context)
        if request.session_id != 7:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {request.session_id}")
        return router_pb2.TerminateSessionResponse(was_running=True)

    async def GetServerInfo(self, request: Any, context: Any) -> router_pb2.GetServerInfoResponse:
        await self._enter("GetServerInfo", request, context)
        return router_pb2.GetServerInfoResponse(
            version="9.9.9", instance_id="inst-1", rules_files=["/r/default.rules"],
            last_rules_error=router_pb2.RulesError(message="bad", rendered="r:1:1 bad", at_ms=5),
        )


@dataclass
class RunningFake:
    """A fake router serving on 127.0.0.1:port in a background thread."""

    port: int
    state: FakeState
    loop: asyncio.AbstractEventLoop

    @property
    def target(self) -> str:
        """host:port."""
        return f"127.0.0.1:{self.port}"

    def call(self, fn: Any) -> Any:
        """Run fn() on the server's loop and return its result."""
        async def wrapper() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(wrapper(), self.loop).result(10)


@contextlib.contextmanager
def fake_router(server_credentials: grpc.ServerCredentials | None = None) -> Iterator[RunningFake]:
    """Start the fake on a grpc.aio server in its own thread; stop it on exit."""
    state = FakeState()
    loop = asyncio.new_event_loop()
    ready: dict[str, Any] = {}
    started = threading.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        server = grpc.aio.server()
        router_pb2_grpc.add_ToolRouterServiceServicer_to_server(FakeRouter(state), server)
        if server_credentials is None:
            ready["port"] = server.add_insecure_port("127.0.0.1:0")
        else:
            ready["port"] = server.add_secure_port("127.0.0.1:0", server_credentials)
        await server.start()
        started.set()
        await stop.wait()
        await server.stop(0.5)

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    assert started.wait(10), "fake router did not start"
    try:
        yield RunningFake(ready["port"], state, loop)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


@dataclass
class RouterProcess:
    """A real `shellgate serve` subprocess."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def target(self) -> str:
        """host:port."""
        return f"127.0.0.1:{self.port}"


def router_env() -> dict[str, str]:
    """The environment for a router shared by several tests: no per-test orphan marker."""
    env = dict(os.environ)
    env.pop(MARKER_VAR, None)
    return env


@contextlib.contextmanager
def router_process(extra_args: list[str] | None = None, timeout_s: float = 30.0) -> Iterator[RouterProcess]:
    """Run `shellgate serve --listen 127.0.0.1:0 --print-port`; SIGTERM and wait on exit."""
    args = [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--listen", "127.0.0.1:0",
            "--print-port", "--log-level", "WARNING", *(extra_args or [])]
    # stderr goes to a file: a pipe nobody reads would block a chatty router.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=router_env())
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        line = proc.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            proc.kill()
            proc.wait(timeout=10)
            log.seek(0)
            err = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"router did not print its port: {line!r} {err}")
        yield RouterProcess(proc, int(line))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        log.close()
