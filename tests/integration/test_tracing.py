"""One remote Execute yields one trace whose spans cross router and daemon (issue 19)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from shellgate.common.tracing import enable_command_text
from shellgate.execserver.server import RunningServer, start_server
from shellgate.router.runtime.environments.remote.environment import RemoteConfig
from shellgate.v1 import router_pb2

from tests.execserver_harness import daemon_config
from tests.router_harness import function_item, router_config, running_router, turn


def _exporter() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@contextmanager
def daemon_in_thread() -> Iterator[RunningServer]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    running = asyncio.run_coroutine_threadsafe(start_server(daemon_config()), loop).result(30)
    try:
        yield running
    finally:
        asyncio.run_coroutine_threadsafe(running.stop(1_000), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_remote_execute_is_one_trace_across_router_and_daemon(tmp_path: Path) -> None:
    exporter = _exporter()
    with daemon_in_thread() as daemon:
        config = router_config(
            local_cwd=str(tmp_path),
            environments=(RemoteConfig("build", f"127.0.0.1:{daemon.port}"),),
        )
        with running_router(config) as router:
            # The caller's own trace: the router's span must join it.
            tracer = trace.get_tracer("test-caller")
            with tracer.start_as_current_span("caller") as caller_span:
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
                request = router_pb2.ExecuteRequest(
                    thread_id="t", turn=turn(environment_id="build"),
                    item=function_item(
                        "exec_command", {"cmd": "echo traced", "login": False}, "c1"
                    ),
                )  # fmt: skip
                events = list(
                    router.stub.Execute(request, timeout=30, metadata=list(carrier.items()))
                )
            assert events[-1].completed.exit_code == 0, events[-1]
            assert events[-1].completed.termination == 1, events[-1]
    spans = exporter.get_finished_spans()
    trace_id = caller_span.get_span_context().trace_id
    ours = [s for s in spans if s.context.trace_id == trace_id]
    names = {s.name for s in ours}
    assert {"caller", "shellgate.execute", "shellgate.project", "shellgate.policy",
            "shellgate.run", "shellgate.execserver.start"} <= names, names  # fmt: skip
    by_name = {s.name: s for s in ours}
    execute = by_name["shellgate.execute"]
    assert (
        execute.parent is not None
        and execute.parent.span_id == caller_span.get_span_context().span_id
    )
    events = [e.name for e in execute.events]
    assert events[0] == "spawned" and "first_byte" in events and events[-1] == "exited"
    assert execute.attributes is not None and execute.attributes["outcome"] == "exited"
    daemon_span = by_name["shellgate.execserver.start"]
    # The daemon's span hangs under the router's attempt (the run span), across gRPC.
    assert daemon_span.parent is not None
    assert daemon_span.parent.span_id == by_name["shellgate.run"].context.span_id
    assert [e.name for e in daemon_span.events][:1] == ["spawned"]
    assert "exited" in [e.name for e in daemon_span.events]
    # No command text in any attribute.
    for s in ours:
        assert "echo traced" not in str(dict(s.attributes or {})), s.name


def test_approval_wait_is_a_span_linked_to_the_parking_call(tmp_path: Path) -> None:
    exporter = _exporter()
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "ask.rules").write_text('prefix_rule(pattern=["touch"], decision="prompt")\n')
    config = router_config(local_cwd=str(tmp_path), rules_dirs=(str(tmp_path / "rules"),))
    with running_router(config) as router:
        item = function_item("shell_command", {"command": "touch a", "login": False}, "c1")
        request = router_pb2.ExecuteRequest(thread_id="t", turn=turn(), item=item)
        asked = list(router.stub.Execute(request, timeout=30))[-1].approval_required
        assert asked.approval_id
        parked_ns = time.time_ns()
        time.sleep(0.05)  # a measurable wait
        resume = router_pb2.ExecuteRequest(
            thread_id="t", turn=turn(),
            resume=router_pb2.ResumeCall(
                approval_id=asked.approval_id, decision=router_pb2.APPROVAL_DECISION_APPROVED
            ),
        )  # fmt: skip
        decided_ns = time.time_ns()
        assert list(router.stub.Execute(resume, timeout=30))[-1].completed.exit_code == 0
    spans = exporter.get_finished_spans()
    (wait,) = [s for s in spans if s.name == "approval.wait"]
    executes = [s for s in spans if s.name == "shellgate.execute"]
    parking = next(s for s in executes if "approval_required" in [e.name for e in s.events])
    resuming = next(s for s in executes if s.parent is None and s is not parking and (
        s.context.trace_id == wait.context.trace_id))  # fmt: skip
    # Child of the resume's Execute, linked to the Execute that parked the call.
    assert wait.parent is not None and wait.parent.span_id == resuming.context.span_id
    assert [link.context.span_id for link in wait.links] == [parking.context.span_id]
    assert wait.start_time is not None and wait.end_time is not None
    assert parking.start_time is not None and parking.start_time <= wait.start_time <= parked_ns
    assert wait.end_time >= decided_ns and wait.end_time - wait.start_time >= 50_000_000
    assert dict(wait.attributes or {}) == {"decision": "approved", "approval.source": "caller"}


def test_command_text_only_when_enabled_and_redacted(tmp_path: Path) -> None:
    exporter = _exporter()
    secrets = tmp_path / "secrets"
    secrets.write_text("hunter2-secret\n")
    config = router_config(
        local_cwd=str(tmp_path), otel_command_text=True, redact_values_files=(str(secrets),)
    )
    try:
        tracer = trace.get_tracer("test-caller")
        with running_router(config) as router, tracer.start_as_current_span("caller") as caller:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            item = function_item(
                "exec_command", {"cmd": "echo on hunter2-secret", "login": False}, "c1"
            )
            request = router_pb2.ExecuteRequest(thread_id="t", turn=turn(), item=item)
            list(router.stub.Execute(request, timeout=30, metadata=list(carrier.items())))
    finally:
        enable_command_text(None)
    trace_id = caller.get_span_context().trace_id
    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == trace_id]
    execute = next(s for s in spans if s.name == "shellgate.execute")
    commands = (execute.attributes or {})["shellgate.command"]
    assert len(commands) == 1 and "echo on [REDACTED]" in commands[0], commands
    assert not any("hunter2" in str(dict(s.attributes or {})) for s in spans)


def test_operator_route_wait_is_a_span_of_the_waiting_call(tmp_path: Path) -> None:
    from tests.integration.test_operator_approvals import (
        _decide,
        _open,
        _start,
        _until_pending,
    )

    exporter = _exporter()
    with _start(tmp_path, operator_deadline_ms=30_000) as router:
        stream = _open(router, "traced-op", "c1")
        _, pending = _until_pending(stream)
        time.sleep(0.3)
        _decide(router, pending.approval_id, router_pb2.APPROVAL_DECISION_APPROVED)
        list(stream)
    spans = exporter.get_finished_spans()
    waits = [s for s in spans if s.name == "approval.wait"]
    assert len(waits) == 1, [s.name for s in spans]
    wait = waits[0]
    attributes = dict(wait.attributes or {})
    assert attributes == {"decision": "approved", "approval.source": "operator"}
    assert wait.end_time is not None and wait.start_time is not None
    assert wait.end_time - wait.start_time >= 300_000_000
    execute = next(
        s for s in spans if s.name == "shellgate.execute" and s.context.trace_id == wait.context.trace_id
    )
    assert wait.parent is not None and wait.parent.span_id == execute.context.span_id
