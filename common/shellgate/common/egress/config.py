"""`[network]`: a router's (its local environment's) or a daemon's egress policy, as Codex's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shellgate.common.config_schema import ConfigError, model_of
from shellgate.common.egress.policy import NetworkMode, NetworkPolicy

__all__ = ["NETWORK_TABLE", "NetworkConfig"]


@dataclass(frozen=True)
class NetworkConfig:
    """`[network]`: with `enabled`, a sandboxed command with network reaches only the hosts
    this allows, through the environment's egress proxy (docs/sandbox.md "Egress")."""

    # Off: `network_access` opens the host's network, as Codex 0.169 without a proxy.
    enabled: bool = False
    # full: every method; limited: GET, HEAD and OPTIONS only (no CONNECT, no SOCKS5).
    mode: str = "full"
    # Hosts: `example.com`, `*.example.com` (subdomains), `**.example.com` (both), `*`.
    allowed_domains: tuple[str, ...] = ()
    # Always refused, whatever the allow-list says.
    denied_domains: tuple[str, ...] = ()
    # Loopback, private and link-local addresses allowed (otherwise only as literals listed).
    allow_local_binding: bool = False

    def policy(self) -> NetworkPolicy:
        """The policy this table says."""
        try:
            return NetworkPolicy(
                enabled=self.enabled,
                mode=NetworkMode(self.mode),
                allowed_domains=tuple(self.allowed_domains),
                denied_domains=tuple(self.denied_domains),
                allow_local_binding=self.allow_local_binding,
            )
        except ValueError as exc:
            raise ConfigError("network.denied_domains", str(exc)) from exc


NETWORK_TABLE = model_of(NetworkConfig, types={"mode": Literal["full", "limited"]})
