"""The one connection management of the shared store: every Redis path goes through it.

A `RedisLink` holds the clients of a `redis_url` (redis_connect: one server, Sentinel or
Cluster, and the replica bus's pub/sub client) and the one gate every Redis operation
passes, `run(what, op)`: thread state, sessions and leases (redis_state), the operator
board (redis_board), the replica bus (redis_bus) and the shared amendments. A Redis error
becomes SharedStateUnavailableError and is counted by the one `StoreMonitor`, which logs
an outage once when it starts, summarises it, and logs once when it ends (never a
traceback: an outage is an expected state, not a bug).

Reconnection is redis-py's, per pooled connection (`Retry`, health checks): a connection
broken by a restart is dropped and dialled again by the next command, so nothing here
holds a dead connection. While the store is down an operation fails fast (no connect
timeout per call) — except one real attempt every `RETRY_WHILE_DOWN_S`, so the first
calls after Redis returns find it even between two probes of the monitor.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError
from shellgate.common.errors import SharedStateUnavailableError
from shellgate.router.runtime.store.monitor import StoreMonitor
from shellgate.router.runtime.store.redis_connect import connect

__all__ = ["RETRY_WHILE_DOWN_S", "RedisLink"]

T = TypeVar("T")
# While down, at most one operation per this many seconds tries Redis for real (the others
# fail fast); the monitor's probe runs beside it.
RETRY_WHILE_DOWN_S = 0.5


class RedisLink:
    """The shared store's clients and the gate all their operations pass (`run`)."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        bus_client: Redis | None = None,
        extra: Sequence[Redis] = (),
        monitor: StoreMonitor | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        # Pub/sub of the replica bus (a Cluster's is one node: redis_connect.connect).
        self.bus_client: Redis | None = (
            bus_client if bus_client is not None else client if isinstance(client, Redis) else None
        )
        # Connections to the Sentinels or the Cluster bus node, closed with the link.
        self._extra = list(extra)
        self.monitor = monitor or StoreMonitor(clock)
        self._clock = clock
        self._last_try = -RETRY_WHILE_DOWN_S

    @classmethod
    def from_url(cls, url: str, *, timeout_ms: int = 2_000) -> RedisLink:
        """Lazily connecting clients for `url`; ValueError when it cannot be understood."""
        client, extra, bus = connect(url, timeout_ms=timeout_ms)
        return cls(client, bus_client=bus, extra=[e for e in extra if e is not client])

    async def run(
        self, what: str, op: Callable[[], Awaitable[T]], *, probing: bool = False
    ) -> T:
        """`op()` through the gate: its value, or SharedStateUnavailableError naming `what`."""
        if not (self.monitor.up or probing):
            now = self._clock()
            if now - self._last_try < RETRY_WHILE_DOWN_S:
                self.monitor.refused(what)
                raise SharedStateUnavailableError(
                    f"shared thread state unavailable ({what}): {self.monitor.last_error}"
                )
            self._last_try = now  # this one tries: Redis may be back before the probe says
        try:
            value = await op()
        except (RedisError, OSError) as exc:
            self._last_try = self._clock()
            self.monitor.failed(what, exc)
            raise SharedStateUnavailableError(
                f"shared thread state unavailable ({what}): {type(exc).__name__}: {exc}"
            ) from exc
        self.monitor.succeeded()
        return value

    def failed(self, what: str, error: BaseException) -> None:
        """Count a failure seen outside `run` (the bus subscriber's long-lived connection)."""
        self._last_try = self._clock()
        self.monitor.failed(what, error)

    async def aclose(self) -> None:
        """Close every client."""
        await self.client.aclose()
        if self.bus_client is not None and self.bus_client is not self.client:
            await self.bus_client.aclose()
        for extra in self._extra:
            if extra is not self.bus_client:
                await extra.aclose()
