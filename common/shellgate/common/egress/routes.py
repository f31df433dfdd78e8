"""The egress proxy's routes: who a connection speaks for, and what it may reach.

Each sandboxed command with governed network gets a route: a random id its in-sandbox bridge
sends before the bytes it forwards, the command's policy (its environment's, narrowed by its
turn), who may be asked about a `prompt` host, and the labels its decisions are recorded
with. The id is no secret worth having: only the bridge can reach the proxy's socket (the
command's seccomp filter refuses `AF_UNIX` sockets), and anyone outside the sandbox with
this user's rights could open the network anyway. Routes of finished commands are dropped
oldest first past a bound, so nothing has to tell the proxy a command ended.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from shellgate.common.egress.policy import Decision, NetworkPolicy, Protocol

__all__ = ["Asker", "EgressEvent", "EgressRequest", "Observer", "Route", "RouteTable"]

ROUTE_ID_BYTES = 16
MAX_ROUTES = 4096


@dataclass(frozen=True)
class EgressRequest:
    """One connection the proxy was asked to make."""

    host: str
    port: int
    protocol: Protocol
    method: str


@dataclass(frozen=True)
class EgressEvent:
    """One egress decision, for the audit log and the metrics."""

    request: EgressRequest
    decision: Decision
    # Who decided: "policy" (the lists), "approval" (someone asked), "session" (a grant).
    source: str
    labels: Mapping[str, str] = field(default_factory=dict)


# Asked about a `prompt` host: True lets this request through (a session grant is the
# asker's to remember).
Asker = Callable[[EgressRequest], Awaitable[bool]]
Observer = Callable[[EgressEvent], None]


@dataclass(frozen=True)
class Route:
    """One command's view of the proxy."""

    policy: NetworkPolicy
    ask: Asker | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


class RouteTable:
    """Routes by id, the oldest dropped past `limit`."""

    def __init__(self, limit: int = MAX_ROUTES) -> None:
        self._routes: OrderedDict[str, Route] = OrderedDict()
        self._limit = limit

    def add(self, route: Route) -> str:
        """Register a route; its id."""
        route_id = secrets.token_hex(ROUTE_ID_BYTES)
        self._routes[route_id] = route
        while len(self._routes) > self._limit:
            self._routes.popitem(last=False)
        return route_id

    def get(self, route_id: str) -> Route | None:
        """The route, or None (unknown or dropped)."""
        return self._routes.get(route_id)

    def discard(self, route_id: str) -> None:
        """Forget a route (its command ended)."""
        self._routes.pop(route_id, None)

    def __len__(self) -> int:
        return len(self._routes)
