"""The router's Prometheus metrics (prometheus_client); labels are bounded.

Only these label kinds exist: the tool (one of the router's tools, else `other`), the
outcome (a termination reason), the environment id (one of the configured ids, else
`other`), the decision and its source (fixed sets, runtime/audit.py), the gRPC status code
name, the rules reload result and the shared store's operation name — so the number of
series is fixed by configuration, never by traffic. docs/operations.md lists every metric;
tests/integration/test_metrics.py scrapes each one and sees it move.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from shellgate.common.tracing import command_attributes, set_attributes, span_event
from shellgate.router.projection import ShellCall
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    AuditDecision,
    DecisionSource,
)
from shellgate.router.runtime.call.events import (
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    ProjectionEvent,
    StartedEvent,
)
from shellgate.router.runtime.store.monitor import StoreMonitor

__all__ = ["KNOWN_TOOLS", "CallClock", "Metrics", "trace_event"]

# `*_created` series double the output and no alert uses them (process-wide switch).
disable_created_metrics()  # type: ignore[no-untyped-call]

KNOWN_TOOLS = frozenset({"shell_command", "exec_command", "write_stdin", "apply_patch"})
# Label values: the vocabulary's words (StrEnums compare and hash as their strings).
KNOWN_DECISIONS: frozenset[str] = frozenset(AuditDecision)
# Decisions an operator-routed approval settles with: every answer of ApprovalDecision.
OPERATOR_DECISIONS: frozenset[str] = frozenset(ApprovalDecision)
KNOWN_SOURCES: frozenset[str] = frozenset(DecisionSource) - {DecisionSource.INTERRUPT}
# Approvals settled on the board end decided by an operator (or, a live caller approval,
# by its caller), by the deadline, or interrupted.
OPERATOR_SOURCES: frozenset[str] = frozenset({
    DecisionSource.OPERATOR, DecisionSource.CALLER, DecisionSource.DEADLINE,
    DecisionSource.INTERRUPT,
})  # fmt: skip
WEBHOOK_OUTCOMES = frozenset({"delivered", "retried", "failed"})
# Seconds: from a few milliseconds (an echo) to the 10-minute classic timeout.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600)


class CallClock:
    """One Execute stream's timing: first start and first output byte are observed once."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.started = time.monotonic()
        self.spawned = False
        self.first_byte = False


def trace_event(trace: Any, clock: CallClock, event: ExecuteEvent) -> None:
    """The call span's events: each process start, the first output byte, the end.

    Called before `Metrics.observe_event` marks the clock's first byte.
    """
    if trace is None:
        return
    if isinstance(event, ProjectionEvent):
        outcome = event.projected.outcome
        if isinstance(outcome, ShellCall):
            commands = (shlex.join(e.handler.argv) for e in outcome.elements)
            set_attributes(trace, command_attributes(commands))
    elif isinstance(event, StartedEvent):
        span_event(trace, "spawned", {"environment": event.environment_id,
                                      "sandboxed": event.sandboxed})  # fmt: skip
    elif isinstance(event, OutputEvent) and event.data and not clock.first_byte:
        span_event(trace, "first_byte")
    elif isinstance(event, ApprovalRequiredEvent):
        span_event(trace, "approval_required", {"kind": event.kind.value})
    elif isinstance(event, CompletedEvent):
        set_attributes(trace, {"outcome": event.termination.value})
        span_event(trace, "exited", {"outcome": event.termination.value})


class _StateCollector(Collector):
    """Values read at scrape time: shared store, remote environments, thread state sizes."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        for name, (help_text, read) in self.metrics.gauges.items():
            yield GaugeMetricFamily(name, help_text, value=read())
        for name, (help_text, label, read_all) in self.metrics.labelled_gauges.items():
            family = GaugeMetricFamily(name, help_text, labels=[label])
            for value_label, value in sorted(read_all().items()):
                family.add_metric([value_label], value)
            yield family
        monitor = self.metrics.shared_state
        if monitor is None:
            return
        yield GaugeMetricFamily(
            "shellgate_shared_state_up", "1 while the shared store (Redis) answers.",
            value=int(monitor.up),
        )  # fmt: skip
        errors = CounterMetricFamily(
            "shellgate_shared_state_errors", "Failed shared-store operations.", labels=["op"]
        )
        # `op` is one of the store's fixed operation names: bounded.
        for op, n in sorted(monitor.errors.items()):
            errors.add_metric([op], n)
        yield errors
        yield CounterMetricFamily(
            "shellgate_shared_state_resets", "Times the store was found to have lost its data.",
            value=monitor.resets,
        )  # fmt: skip


class Metrics:
    """Every router metric in one registry (one per router: tests run several in a process)."""

    def __init__(self, environments: Iterable[str]) -> None:
        self._environments = frozenset(environments)
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "shellgate_calls", "Execute calls that reached `completed`.",
            ["tool", "outcome", "environment"], registry=r,
        )  # fmt: skip
        self.call_seconds = Histogram(
            "shellgate_call_duration_seconds", "Wall time of completed calls.", ["tool"],
            buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.spawn_seconds = Histogram(
            "shellgate_spawn_seconds", "From the Execute request to its first process start.",
            ["tool"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.first_byte_seconds = Histogram(
            "shellgate_first_byte_seconds", "From the Execute request to its first output byte.",
            ["tool"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.output_bytes = Counter(
            "shellgate_output_bytes", "Process output bytes streamed to callers.", ["tool"],
            registry=r,
        )  # fmt: skip
        self.decisions = Counter(
            "shellgate_decisions", "Approval decisions about elements (docs/operations.md).",
            ["decision", "source"], registry=r,
        )  # fmt: skip
        self.rpc_errors = Counter(
            "shellgate_rpc_errors", "RPCs answered with an error status.", ["code"], registry=r
        )
        self.rules_reloads = Counter(
            "shellgate_rules_reloads", "Rules reloads (SIGHUP, amendments), by result.",
            ["result"], registry=r,
        )  # fmt: skip
        self.operator_decisions = Counter(
            "shellgate_operator_decisions",
            "Board approvals settled, by source (operator, caller: a live caller approval, "
            "deadline, interrupt).",
            ["source", "decision"], registry=r,
        )  # fmt: skip
        self.webhook_deliveries = Counter(
            "shellgate_approval_webhook_deliveries",
            "Approval webhook POST attempts by outcome (delivered, retried, failed).",
            ["outcome"], registry=r,
        )  # fmt: skip
        self.egress = Counter(
            "shellgate_egress_decisions",
            "Egress proxy decisions about sandboxed commands' requests (docs/sandbox.md).",
            ["decision", "reason", "protocol"], registry=r,
        )  # fmt: skip
        self.gauges: dict[str, tuple[str, Callable[[], float]]] = {}
        # Gauges with one label: name -> (help, label name, read -> {label value: value}).
        self.labelled_gauges: dict[str, tuple[str, str, Callable[[], dict[str, float]]]] = {}
        self.shared_state: StoreMonitor | None = None
        r.register(_StateCollector(self))

    def watch_shared_state(self, monitor: StoreMonitor) -> None:
        """Report the shared store's reachability, failures (by operation) and data losses."""
        self.shared_state = monitor

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        """A gauge read at scrape time (on the scraping thread: `read` must be cheap)."""
        self.gauges[name] = (help_text, read)

    def labelled_gauge(
        self, name: str, help_text: str, label: str, read: Callable[[], dict[str, float]]
    ) -> None:
        """A gauge with one (bounded) label, read at scrape time."""
        self.labelled_gauges[name] = (help_text, label, read)

    def operator_decided(self, source: DecisionSource, decision: ApprovalDecision) -> None:
        """Count one settled operator-routed approval."""
        self.operator_decisions.labels(
            str(source) if source in OPERATOR_SOURCES else "other",
            str(decision) if decision in OPERATOR_DECISIONS else "other",
        ).inc()

    def webhook_delivery(self, outcome: str) -> None:
        """Count one webhook attempt."""
        self.webhook_deliveries.labels(outcome if outcome in WEBHOOK_OUTCOMES else "other").inc()

    def tool(self, tool: str | None) -> str:
        """The bounded tool label."""
        return tool if tool in KNOWN_TOOLS else "other"

    def _env(self, environment_id: str | None) -> str:
        return environment_id if environment_id in self._environments else "other"

    def call_completed(
        self, tool: str | None, outcome: str, environment_id: str | None, wall_ms: int
    ) -> None:
        """Count one completed call and its wall time."""
        label = self.tool(tool)
        self.calls.labels(label, outcome, self._env(environment_id)).inc()
        self.call_seconds.labels(label).observe(wall_ms / 1000)

    def observe_event(self, clock: CallClock, event: ExecuteEvent) -> None:
        """Spawn latency, time to first byte and bytes streamed, from an Execute stream."""
        if isinstance(event, StartedEvent) and not clock.spawned:
            clock.spawned = True
            self.spawn_seconds.labels(clock.tool).observe(time.monotonic() - clock.started)
        elif isinstance(event, OutputEvent) and event.data:
            if not clock.first_byte:
                clock.first_byte = True
                self.first_byte_seconds.labels(clock.tool).observe(time.monotonic() - clock.started)
            self.output_bytes.labels(clock.tool).inc(len(event.data))

    def rpc_rejected(self, code: str) -> None:
        """Count an RPC answered with an error status (code name only)."""
        self.rpc_errors.labels(code).inc()

    def rules_reloaded(self, ok: bool) -> None:
        """Count one rules reload."""
        self.rules_reloads.labels("ok" if ok else "failed").inc()

    def record(self, entry: dict[str, Any]) -> None:
        """AuditSink: count decisions by decision and source (both from fixed sets)."""
        if entry.get("type") == "egress":
            # Every label is one of the proxy's fixed words (policy.Verdict, Reason, Protocol).
            self.egress.labels(entry["decision"], entry["reason"], entry["protocol"]).inc()
            return
        if entry.get("type") != "decision":
            return
        decision = entry.get("decision", "")
        source = (entry.get("approval") or {}).get("source", "")
        self.decisions.labels(
            decision if decision in KNOWN_DECISIONS else "other",
            source if source in KNOWN_SOURCES else "other",
        ).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
