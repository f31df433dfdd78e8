"""Environment discovery from DNS (a headless Service): one environment per address.

Each refresh resolves the name's A/AAAA records; a new address becomes a remote
environment `<id_prefix>-<ip>` (stable: the same address always gets the same id), every
environment is health-checked (gRPC health Check), and an address that stopped resolving
stays listed as unreachable with the reason — never silently replaced by another daemon —
until it has been gone for `prune_after_ms` and no session of this router runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from shellgate.common.tasks import cancel_and_wait
from shellgate.router.runtime.environments.registry import EnvironmentRegistry
from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment

__all__ = ["DiscoveredEnvironment", "DnsDiscovery", "DnsDiscoveryConfig", "environment_id_for"]

_log = logging.getLogger(__name__)
Resolver = Callable[[str, int], Awaitable[list[str]]]
# Discovered daemons are dialled as configured ones are, but connects give up after 5 s.
_DISCOVERED_DIAL = DialSettings(connect_timeout_ms=5_000)


@dataclass(frozen=True)
class DnsDiscoveryConfig:
    """One `[[discovery]]` entry: DNS name, port, id prefix, how its daemons are dialled (ms)."""

    dns_name: str
    port: int
    id_prefix: str
    refresh_interval_ms: int = 10_000
    # Every discovered daemon's; `tls_server_name` defaults to `dns_name` when TLS files are
    # set (the daemons are dialled by IP).
    dial: DialSettings = _DISCOVERED_DIAL
    # An unknown environment id triggers a lookup, at most once per this interval.
    miss_refresh_min_interval_ms: int = 1_000
    # How long an address gone from DNS stays listed (unreachable) before it is removed;
    # it also stays while a session of this router runs on it.
    prune_after_ms: int = 600_000
    reconnect_initial_backoff_ms: int = 500
    reconnect_max_backoff_ms: int = 30_000

    def remote_config(self, address: str) -> RemoteConfig:
        """The RemoteConfig of the daemon at one resolved address."""
        host = f"[{address}]" if ":" in address else address
        dial = self.dial
        if dial.has_tls_files and not dial.tls_server_name:
            dial = dataclasses.replace(dial, tls_server_name=self.dns_name)
        return RemoteConfig(
            environment_id=environment_id_for(self.id_prefix, address),
            target=f"{host}:{self.port}",
            dial=dial,
            reconnect_initial_backoff_ms=self.reconnect_initial_backoff_ms,
            reconnect_max_backoff_ms=self.reconnect_max_backoff_ms,
        )


def environment_id_for(prefix: str, address: str) -> str:
    """`<prefix>-<ip>`, IPv6 colons as dashes (ids stay plain tokens), compressed form."""
    ip = ipaddress.ip_address(address)
    return f"{prefix}-{str(ip).replace(':', '-')}"


# getaddrinfo answers meaning "the name has no addresses" (NXDOMAIN, no records): a
# headless Service without ready endpoints. Any other failure (EAI_AGAIN: no answer from
# the resolver) changes nothing.
_NO_ADDRESSES = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


async def resolve_addresses(name: str, port: int) -> list[str]:
    """The A/AAAA addresses of a name, deduplicated and sorted (IPv4 first)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        if exc.errno in _NO_ADDRESSES:
            return []
        raise
    found = {str(ipaddress.ip_address(info[4][0])) for info in infos}
    return sorted(found, key=lambda a: (ipaddress.ip_address(a).version, ipaddress.ip_address(a)))


@dataclass
class DiscoveredEnvironment:
    """What discovery knows about one address."""

    environment: RemoteEnvironment
    address: str
    resolved: bool = True
    # When the address stopped resolving (monotonic s); None while it resolves.
    vanished_at: float | None = None


class DnsDiscovery:
    """Keeps a registry's discovered environments in step with DNS and their health.

    Lookups are shared: a refresh asked for while one is running (the periodic one, or
    one triggered by an unknown environment id) waits for it instead of starting another,
    and an unknown id triggers no lookup within `miss_refresh_min_interval_ms` of the last.
    An address gone from DNS stays listed (unreachable, with the reason) for
    `prune_after_ms` and as long as a session of this router runs on it; then it is removed.
    """

    def __init__(
        self,
        config: DnsDiscoveryConfig,
        registry: EnvironmentRegistry,
        *,
        resolver: Resolver = resolve_addresses,
        in_use: Callable[[], set[str]] = set,
        on_change: Callable[[], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._registry = registry
        self._resolve = resolver
        self._in_use = in_use
        self._on_change = on_change
        self._clock = clock
        self.found: dict[str, DiscoveredEnvironment] = {}
        self.last_error: str | None = None
        self.lookups = 0
        self._last_lookup_at: float | None = None
        # The lookup in flight, shared by everyone who asks meanwhile (ended by run()).
        self._inflight: asyncio.Task[None] | None = None
        registry.on_unknown(self.refresh_for_unknown)

    async def refresh_once(self) -> list[str]:
        """Look up, health-check the resolved ones, prune; the ids in DNS now."""
        await self._shared_lookup()
        resolved = [e for e in self.found.values() if e.resolved]
        await asyncio.gather(*(e.environment.check_health() for e in resolved))
        await self._prune()
        return [env_id for env_id, e in self.found.items() if e.resolved]

    async def refresh_for_unknown(self) -> None:
        """An environment id was unknown: one lookup (shared, rate-limited), no health checks."""
        idle = self._inflight is None or self._inflight.done()
        if idle and self._last_lookup_at is not None:
            since_ms = (self._clock() - self._last_lookup_at) * 1000
            if since_ms < self.config.miss_refresh_min_interval_ms:
                return
        await self._shared_lookup()

    async def _shared_lookup(self) -> None:
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.create_task(self._lookup(), name="discovery-lookup")
        # Shielded: one waiter cancelled (its client went away) does not cancel the others'.
        await asyncio.shield(self._inflight)

    async def _lookup(self) -> None:
        """Resolve, add new environments, mark vanished ones, tell the owner."""
        cfg = self.config
        self.lookups += 1
        try:
            addresses = await self._resolve(cfg.dns_name, cfg.port)
            self.last_error = None
        except OSError as exc:
            # A failed lookup changes nothing: known environments keep their state.
            self.last_error = f"cannot resolve {cfg.dns_name}: {exc}"
            _log.warning("%s", self.last_error)
            addresses = [d.address for d in self.found.values() if d.resolved]
        finally:
            self._last_lookup_at = self._clock()
        current = set(addresses)
        for address in addresses:
            env_id = environment_id_for(cfg.id_prefix, address)
            entry = self.found.get(env_id)
            if entry is None:
                env = RemoteEnvironment(cfg.remote_config(address))
                try:
                    self._registry.add(env)
                except ValueError:
                    _log.warning("discovered id %s clashes with a configured one", env_id)
                    continue
                self.found[env_id] = DiscoveredEnvironment(env, address)
                _log.info("discovered environment %s at %s", env_id, env.target)
            else:
                entry.resolved, entry.vanished_at = True, None
                entry.environment.withdrawn = False
        for entry in self.found.values():
            if entry.address not in current and entry.resolved:
                entry.resolved, entry.vanished_at = False, self._clock()
                entry.environment.withdrawn = True
                entry.environment.mark_unreachable(
                    f"{entry.address} is no longer resolved by {cfg.dns_name}"
                )
        if self._on_change is not None:
            await self._on_change()

    async def _prune(self) -> None:
        """Remove environments gone from DNS for the grace period that no session uses."""
        now = self._clock()
        grace_s = self.config.prune_after_ms / 1000
        due = [
            env_id
            for env_id, e in self.found.items()
            if e.vanished_at is not None and now - e.vanished_at >= grace_s
        ]
        if not due:
            return
        in_use = self._in_use()
        for env_id in due:
            if env_id in in_use:
                continue
            entry = self.found.pop(env_id)
            self._registry.remove(env_id)
            await entry.environment.aclose()
            _log.info("pruned environment %s (%s left DNS)", env_id, entry.address)
        if self._on_change is not None:
            await self._on_change()

    async def run(self, stop_event: asyncio.Event) -> None:
        """Refresh every `refresh_interval_ms` (first at once) until `stop_event` is set."""
        interval_s = max(self.config.refresh_interval_ms, 1) / 1000
        try:
            while not stop_event.is_set():
                try:
                    await self.refresh_once()
                except Exception:
                    _log.exception("environment discovery failed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop_event.wait(), interval_s)
        finally:
            await cancel_and_wait(self._inflight, log=_log)
