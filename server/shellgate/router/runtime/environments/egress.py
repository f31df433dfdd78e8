"""One environment's egress control on this router: its `[network]` policy with the exec
policy's `network_rule` hosts, its proxy (started on the first governed command), and the
audit log and metrics every decision goes to (docs/sandbox.md "Egress")."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from shellgate.common.egress.policy import EgressNarrowing, NetworkPolicy
from shellgate.common.egress.proxy import EgressProxy
from shellgate.common.egress.routes import Asker, EgressEvent, Route
from shellgate.common.log_setup import log_ids
from shellgate.common.sandbox import SandboxSpec
from shellgate.router.policy import Decision, Policy

__all__ = ["EnvironmentEgress", "egress_asker", "egress_record", "network_rules"]

# Who is asked about a `prompt` host for the command being spawned (set around a call's
# attempt by the runtime); None: such a host is refused.
egress_asker: contextvars.ContextVar[Asker | None] = contextvars.ContextVar(
    "egress_asker", default=None
)
# The exec policy's network rules as (allowed, denied, prompt) hosts.
NetworkRules = Callable[[], tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]


def network_rules(read_policy: Callable[[], Policy]) -> NetworkRules:
    """The exec policy's `network_rule` hosts as the egress policy adds them (read per
    command, so a reload or an amendment counts from the next command on)."""

    def read() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        policy = read_policy()
        allowed, denied = policy.compiled_network_domains()
        prompt = tuple(r.host for r in policy.network_rules if r.decision is Decision.PROMPT)
        return allowed, denied, prompt

    return read


def egress_record(event: EgressEvent) -> dict[str, Any]:
    """The audit record of one egress decision (one per request the proxy was asked for)."""
    request, labels = event.request, event.labels
    return {
        "type": "egress",
        "environment": labels.get("environment", ""),
        "thread": labels.get("thread", ""),
        "call_id": labels.get("call_id", ""),
        "host": request.host,
        "port": request.port,
        "protocol": request.protocol.value,
        "method": request.method,
        "decision": event.decision.verdict.value,
        "reason": event.decision.reason.value,
        "source": event.source,
    }


class EnvironmentEgress:
    """An environment's egress policy and its proxy, started on demand."""

    def __init__(
        self, environment_id: str, policy: NetworkPolicy, rules: NetworkRules | None = None
    ) -> None:
        self.environment_id = environment_id
        self.policy = policy
        self._rules = rules
        self._sinks: list[Callable[[dict[str, Any]], None]] = []
        self.proxy = EgressProxy(self._observed)

    def observe(self, sink: Callable[[dict[str, Any]], None]) -> None:
        """Send every decision's audit record to `sink` too (the audit log, the metrics)."""
        self._sinks.append(sink)

    def _observed(self, event: EgressEvent) -> None:
        entry = egress_record(event)
        for sink in self._sinks:
            sink(entry)

    def effective_policy(self, turn: EgressNarrowing | None = None) -> NetworkPolicy:
        """The environment's policy with the rules' network hosts, as a turn narrows it."""
        policy = self.policy
        if self._rules is not None:
            policy = policy.with_rules(*self._rules())
        return policy.narrowed(turn)

    async def govern(self, spec: SandboxSpec) -> SandboxSpec:
        """`spec` routed through the proxy when it has network and egress control is on,
        under the environment's policy as the spec's turn narrows it."""
        if not spec.network_access or not self.policy.enabled:
            return spec
        thread, call_id = log_ids()
        labels = {"environment": self.environment_id, "thread": thread, "call_id": call_id}
        route = Route(self.effective_policy(spec.egress_narrowing), egress_asker.get(), labels)
        path, route_id = await self.proxy.open_route(route)
        return replace(spec, egress_socket=path, egress_route=route_id)

    async def aclose(self) -> None:
        """Stop the proxy."""
        await self.proxy.aclose()
