"""OpenTelemetry traces, optional: the `shellgate[otel]` extra; off unless configured.

Without the `opentelemetry` packages every helper here does nothing. With them, spans go
to whatever TracerProvider is installed: `configure_tracing` installs the SDK with an OTLP
exporter when a daemon's `otel_endpoint` is set (tests install one with an in-memory
exporter). The W3C trace context travels in gRPC metadata (`traceparent`): accepted from
callers, passed on router → daemon. Attributes are bounded: tool, environment id,
outcome, sandbox — never paths or ids as metric-style labels, and command text only when
the operator turns it on (`enable_command_text`, the router's `otel_command_text`), after
redaction and clipped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

try:
    from opentelemetry import propagate, trace
except ImportError:  # the optional extra is not installed: tracing is off
    propagate = None  # type: ignore[assignment]
    trace = None  # type: ignore[assignment]

__all__ = [
    "command_attributes",
    "configure_tracing",
    "current_trace_context",
    "enable_command_text",
    "inject_metadata",
    "record_approval_wait",
    "set_attributes",
    "shutdown_tracing",
    "span",
    "span_event",
]

AttributeValue = str | int | float | bool | tuple[str, ...]
# Off unless the operator enables it: the redaction applied to command text in spans.
_command_redact: Callable[[str], str] | None = None
# A span carries at most this many commands, each clipped to this many characters.
MAX_SPAN_COMMANDS = 16
MAX_SPAN_COMMAND_CHARS = 4_096


def enable_command_text(redact: Callable[[str], str] | None) -> None:
    """Let spans carry command text, passed through `redact` (None: turn it off again)."""
    global _command_redact
    _command_redact = redact


def command_attributes(commands: Iterable[str]) -> dict[str, AttributeValue]:
    """`{"shellgate.command": (…)}` when command text is enabled, else nothing."""
    redact = _command_redact
    if redact is None or trace is None:
        return {}
    texts = tuple(redact(text)[:MAX_SPAN_COMMAND_CHARS] for text in commands)
    return {"shellgate.command": texts[:MAX_SPAN_COMMANDS]} if texts else {}
_TRACEPARENT = "traceparent"


def _no_provider() -> bool:
    """True while no TracerProvider is installed (every span would be a no-op)."""
    provider = trace.get_tracer_provider()
    return isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def configure_tracing(service_name: str, endpoint: str) -> None:
    """Export spans over OTLP/gRPC to `endpoint` (needs `pip install 'shellgate[otel]'`)."""
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ValueError(
            "otel_endpoint is set but OpenTelemetry is not installed: pip install 'shellgate[otel]'"
        ) from exc
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    # Batches leave every OTEL_BSP_SCHEDULE_DELAY ms (SDK default 5000); shutdown_tracing
    # sends what is left.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.set_tracer_provider(provider)


def shutdown_tracing() -> None:
    """Export the spans still batched and stop the exporter (a daemon's graceful exit)."""
    if trace is None:
        return
    shutdown = getattr(trace.get_tracer_provider(), "shutdown", None)
    if shutdown is not None:
        shutdown()


def current_trace_context() -> dict[str, str]:
    """The current span's W3C context (`traceparent`…) as a dict; empty when not tracing."""
    carrier: dict[str, str] = {}
    if propagate is not None:
        propagate.inject(carrier)
    return carrier


def record_approval_wait(
    parked_at: float,
    decided_at: float,
    decision: str,
    source: str,
    link: Mapping[str, str] | None = None,
) -> None:
    """An `approval.wait` span from parking to decision (wall seconds), child of the current
    span and linked to the span that parked the call (`link`: its `current_trace_context`).

    The wait crosses RPCs (and replicas), so it cannot be a `with` block: its start time is
    the stored parking time.
    """
    if trace is None or _no_provider():
        return
    links = []
    if link:
        parked = trace.get_current_span(propagate.extract(dict(link))).get_span_context()
        if parked.is_valid:
            links.append(trace.Link(parked))
    tracer = trace.get_tracer("shellgate")
    waited = tracer.start_span(
        "approval.wait",
        attributes={"decision": decision, "approval.source": source},
        links=links,
        start_time=int(parked_at * 1e9),
    )
    waited.end(end_time=int(max(decided_at, parked_at) * 1e9))


def inject_metadata(metadata: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """`metadata` plus the current trace context (nothing without an active span)."""
    if propagate is None:
        return metadata
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return metadata + tuple(carrier.items()) if carrier else metadata


@contextlib.contextmanager
def span(
    name: str,
    attributes: Mapping[str, AttributeValue] | None = None,
    metadata: Iterable[tuple[str, Any]] | None = None,
) -> Iterator[Any]:
    """A span, current inside the block; its parent comes from `metadata` when given."""
    carrier = {str(k): str(v) for k, v in metadata or () if isinstance(v, str)}
    if trace is None or (_no_provider() and _TRACEPARENT not in carrier):
        # Nothing would record it and there is no caller context to pass on: the proxy
        # tracer's no-op span cost ~4 % of the router's CPU per Execute (py-spy).
        yield None
        return
    parent = propagate.extract(carrier) if metadata is not None else None
    tracer = trace.get_tracer("shellgate")
    with tracer.start_as_current_span(name, context=parent, attributes=attributes) as current:
        yield current


def span_event(
    current: Any, name: str, attributes: Mapping[str, AttributeValue] | None = None
) -> None:
    """Record an event (spawned, first byte, exited) on `current` (a `span` result)."""
    if current is not None:
        current.add_event(name, attributes=attributes)


def set_attributes(current: Any, attributes: Mapping[str, AttributeValue]) -> None:
    """Set attributes on `current` (a `span` result) once they are known."""
    if current is not None:
        current.set_attributes(attributes)
