"""Egress policy as Codex's `[network]` model: domains, deny precedence, modes, local addresses.

Pure: values in, values out. Codex 0.169's `codex-rs/network-proxy` is the reference (facts,
not code): `example.com` matches that host, `*.example.com` its subdomains (not the apex),
`**.example.com` both, `*` every host (allow-list only: a deny-list `*` is refused), a `*`
inside a label matches within that label; hosts compare lower-cased without a trailing dot.
A deny always wins; an empty allow-list allows nothing. `limited` mode allows only GET,
HEAD and OPTIONS, so it refuses CONNECT and SOCKS5 (their bytes cannot be checked). Local
and private addresses (Codex's non-public ranges) are refused unless `allow_local_binding`,
or unless that very address is allow-listed as an IP literal: the check runs on the
addresses a name resolves to, so a name allow-listed by a wildcard that resolves to
127.0.0.1 or 10.x is still refused (shellgate connects to the address it checked, so the
answer of a second lookup never matters).
"""

from __future__ import annotations

import enum
import fnmatch
import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

__all__ = [
    "Decision",
    "EgressNarrowing",
    "NetworkMode",
    "NetworkPolicy",
    "Protocol",
    "Reason",
    "Verdict",
    "blocked_message",
    "is_non_public",
    "normalize_host",
]


class NetworkMode(enum.StrEnum):
    """Codex's `network.mode`."""

    FULL = "full"
    LIMITED = "limited"


class Protocol(enum.StrEnum):
    """How a request reached the proxy (Codex's policy protocols)."""

    HTTP = "http"
    HTTPS_CONNECT = "https_connect"
    SOCKS5_TCP = "socks5_tcp"


class Verdict(enum.StrEnum):
    """The proxy's answer for one request."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class Reason(enum.StrEnum):
    """Codex's reason words (`codex-rs/network-proxy/src/reasons.rs`)."""

    ALLOWED = "allowed"
    DENIED = "denied"
    NOT_ALLOWED = "not_allowed"
    NOT_ALLOWED_LOCAL = "not_allowed_local"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    POLICY_DENIED = "policy_denied"
    PROMPT = "prompt"
    APPROVED = "approved"
    UNRESOLVED = "unresolved"


# Codex 0.169's texts for a blocked request (the 403 body), and its `x-proxy-error` words.
_MESSAGES = {
    Reason.NOT_ALLOWED: "domain not in allowlist (this is not a denylist block).",
    Reason.NOT_ALLOWED_LOCAL: "local/private addresses not allowed.",
    Reason.DENIED: "domain denied by policy.",
    Reason.METHOD_NOT_ALLOWED: "method not allowed in limited mode.",
}
_HEADER = {
    Reason.NOT_ALLOWED: "blocked-by-allowlist",
    Reason.NOT_ALLOWED_LOCAL: "blocked-by-allowlist",
    Reason.DENIED: "blocked-by-denylist",
    Reason.METHOD_NOT_ALLOWED: "blocked-by-method-policy",
}
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Codex's non-public IPv4 ranges beyond what `ipaddress` classifies as private.
_EXTRA_V4 = tuple(
    ipaddress.ip_network(n)
    for n in ("0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4")
)


def blocked_message(reason: Reason) -> str:
    """Codex's one-line text for a refusal (what the model reads in the 403 body)."""
    text = _MESSAGES.get(reason)
    if text is None:
        return "Codex blocked this request by network policy."
    return f"Codex blocked this request: {text}"


def blocked_header(reason: Reason) -> str:
    """Codex's `x-proxy-error` value for a refusal."""
    return _HEADER.get(reason, "blocked-by-policy")


def normalize_host(host: str) -> str:
    """Lower-cased, without brackets, port or trailing dot (Codex's `normalize_host`)."""
    host = host.strip()
    if host.startswith("[") and "]" in host:
        return host[1 : host.index("]")].lower()
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.lower().rstrip(".")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def is_non_public(address: str) -> bool:
    """Loopback, private, link-local, unspecified, multicast, reserved (Codex's ranges)."""
    ip = _ip(address)
    if ip is None:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified:
        return True
    if ip.is_multicast or ip.is_reserved:
        return True
    return isinstance(ip, ipaddress.IPv4Address) and any(ip in n for n in _EXTRA_V4)


def _label_glob(pattern: str, host: str) -> bool:
    """A `*` inside a label matches within that label only."""
    regex = "".join("[^.]*" if c == "*" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, host) is not None


def host_matches(pattern: str, host: str) -> bool:
    """Whether `host` (normalized) matches one Codex domain pattern."""
    pattern = pattern.strip()
    if pattern == "*":
        return True
    if pattern.startswith("**."):
        apex = normalize_host(pattern[3:])
        return host == apex or host.endswith("." + apex)
    if pattern.startswith("*."):
        apex = normalize_host(pattern[2:])
        return host != apex and host.endswith("." + apex)
    pattern = normalize_host(pattern)
    if "*" in pattern or "?" in pattern:
        return _label_glob(pattern, host) if "?" not in pattern else fnmatch.fnmatch(host, pattern)
    return host == pattern


def _any(patterns: Iterable[str], host: str) -> bool:
    return any(host_matches(p, host) for p in patterns)


@dataclass(frozen=True)
class Decision:
    """One request's verdict and why."""

    verdict: Verdict
    reason: Reason

    @property
    def allowed(self) -> bool:
        """Whether the connection goes ahead."""
        return self.verdict is Verdict.ALLOW


ALLOWED = Decision(Verdict.ALLOW, Reason.ALLOWED)


@dataclass(frozen=True)
class EgressNarrowing:
    """How a turn narrows its environment's policy (`PermissionProfile.egress`)."""

    mode: NetworkMode | None = None
    # When non-empty, a host must match one of these as well as the environment's list.
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()


@dataclass(frozen=True)
class NetworkPolicy:
    """A `[network]` table: what sandboxed commands may reach through the proxy."""

    enabled: bool = False
    mode: NetworkMode = NetworkMode.FULL
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_local_binding: bool = False
    # Hosts a `network_rule(decision="prompt")` names: asked for instead of refused.
    prompt_domains: tuple[str, ...] = ()
    # Allow-lists a host must also match: each narrowing turn's (a turn can only take away).
    narrowing: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if any(p.strip() == "*" for p in self.denied_domains):
            # Codex's text: a global deny wildcard would refuse everything silently.
            raise ValueError(
                'unsupported global wildcard domain pattern "*"; use exact hosts or scoped '
                "wildcards like *.example.com or **.example.com"
            )

    def with_rules(
        self, allowed: Sequence[str], denied: Sequence[str], prompt: Sequence[str]
    ) -> NetworkPolicy:
        """This policy with the exec policy's `network_rule` hosts added (Codex merges them)."""
        return replace(
            self,
            allowed_domains=(*self.allowed_domains, *allowed),
            denied_domains=(*self.denied_domains, *denied),
            prompt_domains=(*self.prompt_domains, *prompt),
        )

    def narrowed(self, turn: EgressNarrowing | None) -> NetworkPolicy:
        """This policy as a turn narrows it: a turn can only take away.

        Its allow-list (when it has one) must match too; its denies add to these; its
        limited mode wins over full. It adds no prompt hosts and never allows local
        addresses the environment refuses.
        """
        if turn is None:
            return self
        limited = NetworkMode.LIMITED in (self.mode, turn.mode)
        extra = (turn.allowed_domains,) if turn.allowed_domains else ()
        return replace(
            self,
            mode=NetworkMode.LIMITED if limited else NetworkMode.FULL,
            denied_domains=(*self.denied_domains, *turn.denied_domains),
            narrowing=(*self.narrowing, *extra),
        )

    def _host_allowed(self, host: str) -> bool:
        lists = (self.allowed_domains, *self.narrowing)
        return all(_any(patterns, host) for patterns in lists)

    def decide_host(self, host: str, method: str, protocol: Protocol) -> Decision:
        """Before any lookup: deny-list, allow-list (or prompt), then the method."""
        host = normalize_host(host)
        if not host or _any(self.denied_domains, host):
            return Decision(Verdict.DENY, Reason.DENIED)
        if self.mode is NetworkMode.LIMITED and (
            protocol is not Protocol.HTTP or method.upper() not in _READ_METHODS
        ):
            return Decision(Verdict.DENY, Reason.METHOD_NOT_ALLOWED)
        if not self._host_allowed(host):
            if _any(self.prompt_domains, host):
                return Decision(Verdict.ASK, Reason.PROMPT)
            return Decision(Verdict.DENY, Reason.NOT_ALLOWED)
        return ALLOWED

    def decide_addresses(self, host: str, addresses: Sequence[str]) -> Decision:
        """After the lookup: every address must be public, or local and allowed."""
        if not addresses:
            return Decision(Verdict.DENY, Reason.UNRESOLVED)
        if self.allow_local_binding:
            return ALLOWED
        for address in addresses:
            if is_non_public(address) and not self._local_allowed(address):
                return Decision(Verdict.DENY, Reason.NOT_ALLOWED_LOCAL)
        return ALLOWED

    def _local_allowed(self, address: str) -> bool:
        """A local address passes only as an allow-listed IP literal (never by a wildcard)."""
        # The environment's list alone: a turn narrows hosts (checked before the lookup),
        # and can never add a local address the environment does not list.
        ip = _ip(address)
        return ip is not None and any(_ip(normalize_host(p)) == ip for p in self.allowed_domains)
