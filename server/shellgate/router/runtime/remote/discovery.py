"""Environment discovery from DNS (a headless Service): one environment per address.

Each refresh resolves the name's A/AAAA records; a new address becomes a remote
environment `<id_prefix>-<ip>` (stable: the same address always gets the same id), every
environment is health-checked (gRPC health Check), and an address that stopped resolving
stays listed as unreachable with the reason — never silently replaced by another daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from shellgate.router.runtime.registry import EnvironmentRegistry
from shellgate.router.runtime.remote.config import RemoteConfig
from shellgate.router.runtime.remote.environment import RemoteEnvironment

__all__ = ["DiscoveredEnvironment", "DnsDiscovery", "DnsDiscoveryConfig", "environment_id_for"]

_log = logging.getLogger(__name__)
Resolver = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True)
class DnsDiscoveryConfig:
    """One `[[discovery]]` entry: the DNS name, port, id prefix, credentials, cadence (ms)."""

    dns_name: str
    port: int
    id_prefix: str
    refresh_interval_ms: int = 10_000
    insecure: bool = False
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    # Name checked against the daemons' certificates (they are dialled by IP); defaults
    # to `dns_name`.
    tls_server_name: str = ""
    token_file: str = ""
    connect_timeout_ms: int = 5_000
    call_timeout_ms: int = 30_000

    def remote_config(self, address: str) -> RemoteConfig:
        """The RemoteConfig of the daemon at one resolved address."""
        host = f"[{address}]" if ":" in address else address
        tls_files = self.tls_ca_file or self.tls_cert_file or self.tls_key_file
        return RemoteConfig(
            environment_id=environment_id_for(self.id_prefix, address),
            target=f"{host}:{self.port}",
            insecure=self.insecure,
            tls_ca_file=self.tls_ca_file,
            tls_cert_file=self.tls_cert_file,
            tls_key_file=self.tls_key_file,
            tls_server_name=self.tls_server_name or (self.dns_name if tls_files else ""),
            token_file=self.token_file,
            connect_timeout_ms=self.connect_timeout_ms,
            call_timeout_ms=self.call_timeout_ms,
        )


def environment_id_for(prefix: str, address: str) -> str:
    """`<prefix>-<ip>`, IPv6 colons as dashes (ids stay plain tokens), compressed form."""
    ip = ipaddress.ip_address(address)
    return f"{prefix}-{str(ip).replace(':', '-')}"


async def resolve_addresses(name: str, port: int) -> list[str]:
    """The A/AAAA addresses of a name, deduplicated and sorted (IPv4 first)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    found = {str(ipaddress.ip_address(info[4][0])) for info in infos}
    return sorted(found, key=lambda a: (ipaddress.ip_address(a).version, ipaddress.ip_address(a)))


@dataclass
class DiscoveredEnvironment:
    """What discovery knows about one address."""

    environment: RemoteEnvironment
    address: str
    resolved: bool = True


class DnsDiscovery:
    """Keeps a registry's discovered environments in step with DNS and their health."""

    def __init__(
        self,
        config: DnsDiscoveryConfig,
        registry: EnvironmentRegistry,
        *,
        resolver: Resolver = resolve_addresses,
    ) -> None:
        self.config = config
        self._registry = registry
        self._resolve = resolver
        self.found: dict[str, DiscoveredEnvironment] = {}
        self.last_error: str | None = None

    async def refresh_once(self) -> list[str]:
        """Resolve, add new environments, mark vanished ones, health-check; ids in DNS now."""
        cfg = self.config
        try:
            addresses = await self._resolve(cfg.dns_name, cfg.port)
            self.last_error = None
        except OSError as exc:
            # A failed lookup changes nothing: known environments keep their state.
            self.last_error = f"cannot resolve {cfg.dns_name}: {exc}"
            _log.warning("%s", self.last_error)
            addresses = [d.address for d in self.found.values() if d.resolved]
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
                entry.resolved = True
        await asyncio.gather(*(self._check(entry, current) for entry in self.found.values()))
        return [env_id for env_id, e in self.found.items() if e.resolved]

    async def _check(self, entry: DiscoveredEnvironment, current: set[str]) -> None:
        if entry.address not in current:
            entry.resolved = False
            entry.environment.mark_unreachable(
                f"{entry.address} is no longer resolved by {self.config.dns_name}"
            )
            return
        await entry.environment.check_health()

    async def run(self, stop_event: asyncio.Event) -> None:
        """Refresh every `refresh_interval_ms` (first at once) until `stop_event` is set."""
        interval_s = max(self.config.refresh_interval_ms, 1) / 1000
        while not stop_event.is_set():
            try:
                await self.refresh_once()
            except Exception:
                _log.exception("environment discovery failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_event.wait(), interval_s)
