"""Connection bounds shared by both daemons: gRPC core server options and the fd budget.

An idle or preface-only connection costs a file descriptor and nothing else, so a caller
that opens many and never sends anything must not be able to use up the process's
descriptors (then Health itself could not be accepted). Three things keep that bounded:
`grpc.server_handshake_timeout_ms` closes connections that never finish the HTTP/2
preface, `grpc.max_connection_idle_ms` closes connections with no call for that long, and
`grpc.max_allowed_incoming_connections` (gRPC core closes any connection accepted past it)
stays below the `nofile` limit by a reserve, so descriptors for files, processes and the
health listener always remain.

grpc core has no per-peer connection cap, and grpcio shows a server neither connections nor
their peers before a call arrives, so a per-peer cap on *connections* is not possible
in-process. What one peer can use is bounded instead by calls: `PeerCalls` counts the calls
in flight per peer address (the IP, every port of it together) and the wire guard refuses
calls past `max_calls_per_peer` with RESOURCE_EXHAUSTED naming it; idle connections are
bounded by the global cap and the handshake and idle timeouts (docs/reliability.md).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

from shellgate.common.config_schema import PositiveInt, model_of

# Descriptors kept out of the connection budget: log files, rules files, child pipes and
# pseudo-terminals, the health listener, redis — whatever the daemon opens besides calls.
DEFAULT_FD_RESERVE = 256
# Never less than this many connections, whatever the descriptor limit says.
MIN_CONNECTIONS = 16


@dataclass(frozen=True)
class ConnectionLimits:
    """How long connections may sit idle or half-open, and how many may be open at once."""

    # A connection that has not finished the HTTP/2 handshake within this is closed.
    handshake_timeout_ms: int = 10_000
    # A connection with no call in flight for this long gets GOAWAY and is closed.
    max_idle_ms: int = 5 * 60 * 1000
    # Every connection is recycled after this (0 = never); in-flight calls get the grace.
    max_age_ms: int = 0
    max_age_grace_ms: int = 30_000
    # Keepalive enforcement: pings closer together than this without data are strikes,
    # and a client past `max_ping_strikes` is disconnected.
    min_ping_interval_ms: int = 60_000
    max_ping_strikes: int = 2
    # Concurrent calls (HTTP/2 streams) per connection. A harness multiplexes its calls on
    # one channel, and a stream past this is refused (UNAVAILABLE), so it matches the
    # per-peer cap; the admission limits bound the work itself.
    max_concurrent_streams: int = 4_096
    # Open connections at once (0 = the descriptor limit minus `fd_reserve`).
    max_connections: int = 0
    fd_reserve: int = DEFAULT_FD_RESERVE
    # Calls in flight at once from one peer address, over all its connections (0 = no cap).
    # Health `Check` is never counted, so probes answer whatever a peer holds.
    max_calls_per_peer: int = 4_096

    def validate(self) -> None:
        """ValueError naming the first out-of-range field."""
        for name in ("handshake_timeout_ms", "max_idle_ms", "min_ping_interval_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"connections.{name} must be positive")
        for name in ("max_age_ms", "max_age_grace_ms", "max_ping_strikes", "max_connections",
                     "fd_reserve", "max_calls_per_peer"):  # fmt: skip
            if getattr(self, name) < 0:
                raise ValueError(f"connections.{name} must not be negative")
        if self.max_concurrent_streams <= 0:
            raise ValueError("connections.max_concurrent_streams must be positive")


# The `[connections]` table of both daemons: the timeouts and the stream cap need room.
CONNECTIONS_TABLE = model_of(
    ConnectionLimits,
    types={
        name: PositiveInt
        for name in ("handshake_timeout_ms", "max_idle_ms", "min_ping_interval_ms",
                     "max_concurrent_streams")
    },
)  # fmt: skip


def raise_nofile_limit() -> int:
    """Raise this process's `nofile` soft limit to the hard limit; the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        # An unlimited hard limit cannot be a soft value on Linux beyond nr_open; leave it.
        return soft if soft != resource.RLIM_INFINITY else 1 << 20
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # keep the soft limit we have
    return soft


def connection_budget(limits: ConnectionLimits, nofile: int) -> int:
    """Connections allowed at once: the configured cap within `nofile` minus the reserve."""
    budget = max(MIN_CONNECTIONS, nofile - limits.fd_reserve)
    return budget if limits.max_connections == 0 else min(budget, limits.max_connections)


def server_options(limits: ConnectionLimits, nofile: int) -> list[tuple[str, int]]:
    """gRPC core server options enforcing `limits` (the caller adds its message sizes)."""
    options = [
        ("grpc.server_handshake_timeout_ms", limits.handshake_timeout_ms),
        ("grpc.max_connection_idle_ms", limits.max_idle_ms),
        ("grpc.http2.min_ping_interval_without_data_ms", limits.min_ping_interval_ms),
        ("grpc.http2.max_ping_strikes", limits.max_ping_strikes),
        ("grpc.keepalive_permit_without_calls", 0),
        ("grpc.max_concurrent_streams", limits.max_concurrent_streams),
        ("grpc.max_allowed_incoming_connections", connection_budget(limits, nofile)),
    ]
    if limits.max_age_ms:
        options += [
            ("grpc.max_connection_age_ms", limits.max_age_ms),
            ("grpc.max_connection_age_grace_ms", limits.max_age_grace_ms),
        ]
    return options


def peer_address(peer: str) -> str:
    """The address part of a grpc peer string: `ipv4:10.0.0.1:5000` → `ipv4:10.0.0.1`."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return f"{kind}:{rest.rpartition(':')[0]}"
    return kind  # unix sockets and the like: every caller of that kind shares one count


class PeerCalls:
    """Calls in flight per peer address, refused past a cap (0 = no cap)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._calls: dict[str, int] = {}

    def enter(self, address: str) -> bool:
        """Count one more call from `address`; False (nothing counted) when it is at the cap."""
        held = self._calls.get(address, 0)
        if self.limit and held >= self.limit:
            return False
        self._calls[address] = held + 1
        return True

    def leave(self, address: str) -> None:
        """One call from `address` has ended."""
        held = self._calls.get(address, 0) - 1
        if held > 0:
            self._calls[address] = held
        else:
            self._calls.pop(address, None)

    def held(self, address: str) -> int:
        """Calls in flight from `address`."""
        return self._calls.get(address, 0)
