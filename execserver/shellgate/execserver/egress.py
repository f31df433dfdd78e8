"""The daemon's egress control: its `[network]` policy and its proxy for its own commands.

One proxy per policy in the process (a daemon has one), started by the first governed
command's Start. The daemon keeps no audit log: each decision is one INFO log line
(`egress <decision> <host>:<port> …`, the caller and process owner named) and counts in
`shellgate_execserver_egress_decisions` (docs/sandbox.md "Egress").
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import replace

from shellgate.common.egress.config import NetworkConfig
from shellgate.common.egress.proxy import EgressProxy
from shellgate.common.egress.routes import EgressEvent, Route
from shellgate.common.sandbox import SandboxSpec

__all__ = ["EGRESS_COUNTS", "govern"]

_log = logging.getLogger(__name__)
# (decision, reason, protocol) -> count, read by the metrics at scrape time.
EGRESS_COUNTS: collections.Counter[tuple[str, str, str]] = collections.Counter()
_counts_lock = threading.Lock()
_proxies: dict[NetworkConfig, EgressProxy] = {}


def _observed(event: EgressEvent) -> None:
    request, decision = event.request, event.decision
    with _counts_lock:
        EGRESS_COUNTS[(decision.verdict.value, decision.reason.value, request.protocol.value)] += 1
    _log.info(
        "egress %s %s:%d protocol=%s method=%s reason=%s caller=%s owner=%s",
        decision.verdict.value, request.host, request.port, request.protocol.value,
        request.method or "-", decision.reason.value, event.labels.get("caller", ""),
        event.labels.get("owner", ""),
    )  # fmt: skip


def govern(spec: SandboxSpec, network: NetworkConfig, caller: str, owner: str) -> SandboxSpec:
    """`spec` routed through this daemon's proxy when it has network and `[network]` is on.

    Called from the event loop (a Start being handled): the proxy listens on its first use.
    """
    if not spec.network_access or not network.enabled or spec.mode.value == "none":
        return spec
    proxy = _proxies.get(network)
    if proxy is None:
        proxy = _proxies[network] = EgressProxy(_observed)
    policy = network.policy().narrowed(spec.egress_narrowing)
    route = Route(policy, None, {"caller": caller, "owner": owner})
    path, route_id = proxy.add_route(route)
    return replace(spec, egress_socket=path, egress_route=route_id)
