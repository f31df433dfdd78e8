"""The exec-server's Prometheus metrics (prometheus_client); no label carries an id or path.

Labels: `result` (started, reused, spawn_failed) and the gRPC status code name, both fixed
sets. docs/operations.md lists every metric; tests/integration/test_metrics.py scrapes each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from shellgate.execserver.egress import EGRESS_COUNTS

__all__ = ["ExecServerMetrics"]

# Seconds: spawns take milliseconds; first bytes may wait as long as the command does.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600)


class ExecServerMetrics:
    """Every exec-server metric in one registry (one per daemon)."""

    def __init__(self, processes: Callable[[], float]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.spawns = Counter(
            "shellgate_execserver_spawns", "Start requests, by result.", ["result"], registry=r
        )
        self.spawn_seconds = Histogram(
            "shellgate_execserver_spawn_seconds", "Time to spawn a process (Start to started).",
            buckets=BUCKETS, registry=r,
        )  # fmt: skip
        self.first_byte_seconds = Histogram(
            "shellgate_execserver_first_byte_seconds",
            "From a Start request to the first output byte it streams.",
            buckets=BUCKETS, registry=r,
        )  # fmt: skip
        self.output_bytes = Counter(
            "shellgate_execserver_output_bytes", "Process output bytes streamed by Start.",
            registry=r,
        )  # fmt: skip
        self.rpc_errors = Counter(
            "shellgate_execserver_rpc_errors", "RPCs answered with an error status.", ["code"],
            registry=r,
        )  # fmt: skip
        processes_gauge = Gauge(
            "shellgate_execserver_processes", "Processes running (started, not exited).",
            registry=r,
        )  # fmt: skip
        processes_gauge.set_function(processes)
        r.register(_EgressCollector())

    def rpc_rejected(self, code: str) -> None:
        """Count an RPC answered with an error status (code name only)."""
        self.rpc_errors.labels(code).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


class _EgressCollector(Collector):
    """The egress proxy's decisions (execserver/egress.py), read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        """One counter: decision, reason and protocol, each from the proxy's fixed words."""
        family = CounterMetricFamily(
            "shellgate_execserver_egress_decisions",
            "Egress proxy decisions about sandboxed commands' requests (docs/sandbox.md).",
            labels=["decision", "reason", "protocol"],
        )
        for labels, count in sorted(EGRESS_COUNTS.items()):
            family.add_metric(list(labels), count)
        yield family
