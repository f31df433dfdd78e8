"""Both daemons export their spans over real OTLP/gRPC to a collector (issue 19).

The collector is a small OTLP/gRPC receiver in the test (the `TraceService/Export` RPC of
the `opentelemetry-proto` package's generated classes) on 127.0.0.1 port 0. The router and
a real exec-server daemon are configured as an operator would: `otel_endpoint` in their
TOML files, passed with `--config`. Nothing shortens the export schedule: the spans must
arrive because the daemons flush on their graceful (SIGTERM) shutdown.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc.trace_exporter")
trace_service_pb2 = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="the OTLP receiver needs opentelemetry-proto (test extra)",
)
trace_service_pb2_grpc = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc"
)
from shellgate.v1 import router_pb2, router_pb2_grpc  # noqa: E402

from tests.execserver_harness import daemon_subprocess  # noqa: E402
from tests.router_harness import function_item, router_subprocess, turn  # noqa: E402

MARKER = "otlp-marker-5c2e91"


@dataclass(frozen=True)
class ExportedSpan:
    """One span as the collector received it."""

    service: str
    name: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    text: str  # the span's attributes and events, as text (to look for command text)


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """Keeps every exported span."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[ExportedSpan] = []

    def Export(self, request: Any, context: Any) -> Any:
        """Store the request's spans with their resource's service name."""
        with self.lock:
            for resource_spans in request.resource_spans:
                attributes = resource_spans.resource.attributes
                names = [a.value.string_value for a in attributes if a.key == "service.name"]
                service = names[0] if names else ""
                for scope in resource_spans.scope_spans:
                    for s in scope.spans:
                        text = str(list(s.attributes)) + str(list(s.events))
                        self.spans.append(
                            ExportedSpan(
                                service, s.name, s.trace_id, s.span_id, s.parent_span_id, text
                            )
                        )
        return trace_service_pb2.ExportTraceServiceResponse()


@contextmanager
def otlp_receiver() -> Iterator[tuple[Receiver, int]]:
    """An OTLP/gRPC trace collector on 127.0.0.1 port 0."""
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    receiver = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield receiver, port
    finally:
        server.stop(None)


def test_router_and_daemon_export_one_trace_over_otlp(tmp_path: Path) -> None:
    with otlp_receiver() as (receiver, port):
        endpoint = f'otel_endpoint = "http://127.0.0.1:{port}"\n'
        (tmp_path / "execserver.toml").write_text(endpoint)
        with daemon_subprocess(["--config", str(tmp_path / "execserver.toml")]) as daemon:
            (tmp_path / "router.toml").write_text(
                endpoint
                + f'local_cwd = "{tmp_path}"\n'
                + f'[[environments]]\nid = "build"\ntarget = "{daemon.target}"\n'
            )
            router_config = ["--config", str(tmp_path / "router.toml")]
            with (
                router_subprocess(router_config) as (_, router_port),
                grpc.insecure_channel(f"127.0.0.1:{router_port}") as channel,
            ):
                stub = router_pb2_grpc.ToolRouterServiceStub(channel)
                item = function_item(
                    "exec_command", {"cmd": f"echo {MARKER}", "login": False}, "c1"
                )
                request = router_pb2.ExecuteRequest(
                    thread_id="t", turn=turn(environment_id="build"), item=item
                )
                events = list(stub.Execute(request, timeout=30))
                assert events[-1].completed.exit_code == 0, events[-1]
                assert MARKER in events[-1].completed.output_text
            # Both daemons have exited gracefully (SIGTERM): their batches were flushed.
        spans = list(receiver.spans)
    by_name = {s.name: s for s in spans}
    assert {"shellgate.execute", "shellgate.run", "shellgate.execserver.start"} <= set(by_name)
    run, start = by_name["shellgate.run"], by_name["shellgate.execserver.start"]
    assert (run.service, start.service) == ("shellgate-router", "shellgate-execserver")
    # One trace across the process boundary: the daemon's span is the router attempt's child.
    assert start.trace_id == run.trace_id == by_name["shellgate.execute"].trace_id
    assert start.parent_span_id == run.span_id
    # No command text in any span (attributes or events), on either side.
    assert [s.name for s in spans if MARKER in s.text] == []
