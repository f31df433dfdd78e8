"""The three `.rules` builtins: argument checks and rule construction (spec 04 §1.1–§1.3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shellgate.router.bash.shlex_rs import shlex_split
from shellgate.router.policy.model import (
    Decision,
    NetworkProtocol,
    NetworkRule,
    PatternToken,
    PrefixRule,
    RuleSource,
)
from shellgate.router.policy.paths import normalize_absolute, path_basename
from shellgate.router.policy.rules_errors import Span

# Rust's `char::is_whitespace` (Unicode White_Space); Python's `str.isspace` also accepts
# U+001C..U+001F, which Rust does not.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class BuiltinFailure(Exception):
    """A builtin rejected its arguments (message without location)."""


@dataclass
class Builtin:
    name: str
    params: tuple[tuple[str, str, bool], ...]  # (name, expected type, required)
    impl: Callable[[PolicyBuilder, dict[str, Any], Span], None]


@dataclass
class PendingExamples:
    rules: tuple[PrefixRule, ...]
    matches: list[tuple[str, ...]]
    not_matches: list[tuple[str, ...]]
    span: Span


@dataclass
class PolicyBuilder:
    home: str | None
    # The file being interpreted: rules record it with their call's line.
    current_file: str = ""
    rules: list[PrefixRule] = field(default_factory=list)
    network: list[NetworkRule] = field(default_factory=list)
    hosts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pending: list[PendingExamples] = field(default_factory=list)


def type_name(value: object) -> str:
    if value is None:
        return "NoneType"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    return "function"


def starlark_repr(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(starlark_repr(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(starlark_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, Builtin):
        return f"<built-in function {value.name}>"
    return str(value)


def _pattern_token(value: object) -> PatternToken:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        alts: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise BuiltinFailure(
                    "invalid pattern element: pattern alternative must be a string "
                    f"(got {type_name(item)})"
                )
            alts.append(item)
        if not alts:
            raise BuiltinFailure("invalid pattern element: pattern alternatives cannot be empty")
        return tuple(alts)
    raise BuiltinFailure(
        "invalid pattern element: pattern element must be a string or list of strings "
        f"(got {type_name(value)})"
    )


def _example(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        words = shlex_split(value)
        if words is None:
            raise BuiltinFailure("invalid example: example string has invalid shell syntax")
        if not words:
            raise BuiltinFailure("invalid example: example cannot be an empty string")
        return tuple(words)
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise BuiltinFailure(
                    f"invalid example: example tokens must be strings (got {type_name(item)})"
                )
        if not value:
            raise BuiltinFailure("invalid example: example cannot be an empty list")
        return tuple(value)
    raise BuiltinFailure(
        f"invalid example: example must be a string or list of strings (got {type_name(value)})"
    )


def _justification(raw: str | None) -> str | None:
    if raw is not None and not raw.strip(_RUST_WHITESPACE):
        raise BuiltinFailure("invalid rule: justification cannot be empty")
    return raw


def _decision(raw: str) -> Decision:
    try:
        return Decision(raw)
    except ValueError:
        raise BuiltinFailure(f"invalid decision: {raw}") from None


def _prefix_rule(b: PolicyBuilder, args: dict[str, Any], span: Span) -> None:
    raw_decision = args.get("decision")
    decision = Decision.ALLOW if raw_decision is None else _decision(raw_decision)
    justification = _justification(args.get("justification"))
    tokens = [_pattern_token(v) for v in args["pattern"]]
    if not tokens:
        raise BuiltinFailure("invalid pattern element: pattern cannot be empty")
    matches = [_example(v) for v in args.get("match") or []]
    not_matches = [_example(v) for v in args.get("not_match") or []]
    rest = tuple(tokens[1:])
    # Alternatives in the first position give one rule per program; later ones match in place.
    source = RuleSource(b.current_file, span.line)
    rules = tuple(PrefixRule(head, rest, decision, justification, source) for head in tokens[0])
    b.pending.append(PendingExamples(rules, matches, not_matches, span))
    b.rules.extend(rules)


def normalize_network_host(raw: str) -> str:
    """Normalise a `network_rule` host (spec 04 §1.3); raises ValueError with Codex's text."""
    host = raw.strip(_RUST_WHITESPACE)
    if not host:
        raise ValueError("network_rule host cannot be empty")
    if "://" in host or any(c in host for c in "/?#"):
        raise ValueError(
            "network_rule host must be a hostname or IP literal (without scheme or path)"
        )
    if host.startswith("["):
        inside, sep, rest = host[1:].partition("]")
        if not sep:
            raise ValueError("network_rule host has an invalid bracketed IPv6 literal")
        port = rest[1:] if rest.startswith(":") else None
        if rest and not (port and port.isascii() and port.isdigit()):
            raise ValueError(f"network_rule host contains an unsupported suffix: {raw}")
        host = inside
    elif host.count(":") == 1:
        candidate, _, port = host.rpartition(":")
        if candidate and port and port.isascii() and port.isdigit():
            host = candidate
    # Rust `trim_end_matches('.').trim().to_ascii_lowercase()`: only ASCII letters change case.
    normalized = host.rstrip(".").strip(_RUST_WHITESPACE).translate(_ASCII_LOWER)
    if not normalized:
        raise ValueError("network_rule host cannot be empty")
    if "*" in normalized:
        raise ValueError("network_rule host must be a specific host; wildcards are not allowed")
    if any(c in _RUST_WHITESPACE for c in normalized):
        raise ValueError("network_rule host cannot contain whitespace")
    return normalized


_PROTOCOLS = {
    "http": NetworkProtocol.HTTP,
    "https": NetworkProtocol.HTTPS,
    "https_connect": NetworkProtocol.HTTPS,
    "http-connect": NetworkProtocol.HTTPS,
    "socks5_tcp": NetworkProtocol.SOCKS5_TCP,
    "socks5_udp": NetworkProtocol.SOCKS5_UDP,
}


def _network_rule(b: PolicyBuilder, args: dict[str, Any], span: Span) -> None:
    raw_protocol: str = args["protocol"]
    protocol = _PROTOCOLS.get(raw_protocol)
    if protocol is None:
        raise BuiltinFailure(
            "invalid rule: network_rule protocol must be one of http, https, socks5_tcp, "
            f"socks5_udp (got {raw_protocol})"
        )
    raw_decision: str = args["decision"]
    decision = Decision.FORBIDDEN if raw_decision == "deny" else _decision(raw_decision)
    justification = _justification(args.get("justification"))
    try:
        host = normalize_network_host(args["host"])
    except ValueError as exc:
        raise BuiltinFailure(f"invalid rule: {exc}") from None
    source = RuleSource(b.current_file, span.line)
    b.network.append(NetworkRule(host, protocol, decision, justification, source))


def _host_executable(b: PolicyBuilder, args: dict[str, Any], span: Span) -> None:
    name: str = args["name"]
    if not name:
        raise BuiltinFailure("invalid rule: host_executable name cannot be empty")
    if "/" in name or name in (".", ".."):
        raise BuiltinFailure(
            f"invalid rule: host_executable name must be a bare executable name (got {name})"
        )
    paths: list[str] = []
    for value in args["paths"]:
        if not isinstance(value, str):
            raise BuiltinFailure(
                f"invalid rule: host_executable paths must be strings (got {type_name(value)})"
            )
        if value.startswith("~/") and b.home is not None:
            absolute = normalize_absolute(b.home.rstrip("/") + "/" + value[2:])
        elif value.startswith("/"):
            absolute = normalize_absolute(value)
        else:
            raise BuiltinFailure(
                "invalid rule: host_executable paths must be absolute or use `~/...` "
                f"home-relative syntax (got {value})"
            )
        if path_basename(absolute) != name:
            raise BuiltinFailure(
                f"invalid rule: host_executable path `{value}` must have basename `{name}`"
            )
        if absolute not in paths:
            paths.append(absolute)
    b.hosts[name] = tuple(paths)


BUILTINS = {
    f.name: f
    for f in (
        Builtin(
            "prefix_rule",
            (
                ("pattern", "list", True),
                ("decision", "str", False),
                ("match", "list", False),
                ("not_match", "list", False),
                ("justification", "str", False),
            ),
            _prefix_rule,
        ),
        Builtin(
            "network_rule",
            (
                ("host", "str", True),
                ("protocol", "str", True),
                ("decision", "str", True),
                ("justification", "str", False),
            ),
            _network_rule,
        ),
        Builtin(
            "host_executable", (("name", "str", True), ("paths", "list", True)), _host_executable
        ),
    )
}
