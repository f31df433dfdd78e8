"""Which `Host` and `Origin` headers an HTTP or WebSocket listener of ours answers to.

Every listener that a browser can reach (the Codex WebSocket listener, the console, the
metrics endpoint; the MCP front applies the same rule) refuses, before any work:

- a `Host` that is not the address it serves: a DNS-rebinding page points its own name at
  127.0.0.1 and reaches a loopback listener as "same-origin", but its requests carry that
  name in `Host`. Loopback listeners answer to every spelling of loopback (`127.x.y.z`,
  `[::1]`, `localhost`) on their own port, plus configured names;
- an `Origin` other than the listener's own (a page of another site or another local port).
  Non-browser clients (Codex, grpcurl, curl) send no `Origin`: absent passes.

Pure functions over header values; the transports call them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from shellgate.common.grpc.listen import is_loopback_host

__all__ = ["HostGuard", "split_host_header"]


def _canonical(host: str) -> str:
    """A host name lowercased, IPv6 without brackets, an IP in its compressed form."""
    host = host.strip().lower().rstrip(".")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare


def split_host_header(value: str) -> tuple[str, int | None]:
    """(canonical host, port or None) of a `Host` header; ("", None) when malformed."""
    value = value.strip()
    if not value or any(c in value for c in "/@?# \t"):
        return "", None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return "", None
        host, rest = value[: end + 1], value[end + 1 :]
    elif value.count(":") > 1:
        return "", None  # IPv6 must be bracketed in a Host header
    else:
        host, _, port_text = value.partition(":")
        rest = f":{port_text}" if ":" in value else ""
    if not rest:
        return _canonical(host), None
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return "", None
    return _canonical(host), int(rest[1:])


@dataclass(frozen=True)
class HostGuard:
    """The names and port one listener answers to, and which schemes its origins use."""

    port: int
    names: frozenset[str]
    loopback: bool
    schemes: frozenset[str]

    @classmethod
    def serving(
        cls, bind_host: str, port: int, *, extra_names: Iterable[str] = (), tls: bool = False
    ) -> HostGuard:
        """The guard of a listener bound to `bind_host:port` (`extra_names`: configured)."""
        names = {_canonical(bind_host), *(_canonical(n) for n in extra_names if n)}
        return cls(
            port=port,
            names=frozenset(n for n in names if n),
            loopback=is_loopback_host(_canonical(bind_host)),
            schemes=frozenset({"https", "wss"} if tls else {"http", "ws"}),
        )

    def _name_ok(self, host: str) -> bool:
        if host in self.names:
            return True
        return self.loopback and is_loopback_host(host)

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request's `Host` names this listener (a missing one is refused)."""
        if host_header is None:
            return False
        host, port = split_host_header(host_header)
        if not host or not self._name_ok(host):
            return False
        default = 443 if "https" in self.schemes else 80
        return (port if port is not None else default) == self.port

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a request's `Origin` is this listener's own (absent: a non-browser)."""
        if origin is None:
            return True
        try:
            parts = urlsplit(origin.strip())
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in self.schemes or not parts.hostname or parts.path:
            return False
        default = 443 if parts.scheme in ("https", "wss") else 80
        return self._name_ok(_canonical(parts.hostname)) and (port or default) == self.port

    def refusal(self, host_header: str | None, origin: str | None) -> str:
        """Why a request is refused ("" when it is not): one line for the response body."""
        if not self.host_allowed(host_header):
            return f"unknown host {host_header!r}: this listener serves port {self.port}"
        if not self.origin_allowed(origin):
            return f"foreign origin {origin!r} refused"
        return ""
