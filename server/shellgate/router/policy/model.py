"""Exec-policy domain values: decisions, rules, matches, evaluations and the policy itself."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from shellgate.router.decode.rust_text import debug_str


class Decision(enum.StrEnum):
    """A rule's verdict; ordered allow < prompt < forbidden (strictest wins)."""

    ALLOW = "allow"
    PROMPT = "prompt"
    FORBIDDEN = "forbidden"

    @property
    def rank(self) -> int:
        """Strictness: 0 allow, 1 prompt, 2 forbidden."""
        return _RANK[self]


_RANK = {Decision.ALLOW: 0, Decision.PROMPT: 1, Decision.FORBIDDEN: 2}


def strictest(decisions: tuple[Decision, ...] | list[Decision]) -> Decision | None:
    """The maximum decision, or None for no decisions."""
    return max(decisions, key=lambda d: d.rank) if decisions else None


# One pattern position: the accepted tokens (a single token is a 1-tuple).
PatternToken = tuple[str, ...]

# `file` of a rule amended through the shared (Redis) layer; its `line` is the list index.
SHARED_SOURCE = "<shared>"


@dataclass(frozen=True)
class RuleSource:
    """Where a rule was defined: the rules file and the 1-based line of its call."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class PrefixRule:
    """`prefix_rule` for one program: `first` exactly, then `rest` position by position."""

    first: str
    rest: tuple[PatternToken, ...]
    decision: Decision
    justification: str | None = None
    # Provenance only: two rules with the same pattern and decision are the same rule.
    source: RuleSource | None = field(default=None, compare=False)

    def pattern(self) -> list[str | list[str]]:
        """The pattern as written: a token, or a list of alternatives, per position."""
        return [self.first, *(t[0] if len(t) == 1 else list(t) for t in self.rest)]

    def matches(self, cmd: tuple[str, ...]) -> tuple[str, ...] | None:
        """The matched prefix of `cmd`, or None."""
        length = len(self.rest) + 1
        if len(cmd) < length or cmd[0] != self.first:
            return None
        for alternatives, token in zip(self.rest, cmd[1:length], strict=True):
            if token not in alternatives:
                return None
        return cmd[:length]

    def debug(self) -> str:
        """Rust-Debug-like rendering used in example-validation errors."""
        rest = ", ".join(
            f"Single({debug_str(t[0])})" if len(t) == 1 else f"Alts([{', '.join(debug_str(a) for a in t)}])"
            for t in self.rest
        )
        just = "None" if self.justification is None else f"Some({debug_str(self.justification)})"
        return (
            "PrefixRule { pattern: PrefixPattern { canonical_matching: false, "
            f"first: {debug_str(self.first)}, rest: [{rest}] }}, decision: {_title(self.decision)}, "
            f"justification: {just} }}"
        )


class NetworkProtocol(enum.StrEnum):
    """Protocols of `network_rule`."""

    HTTP = "http"
    HTTPS = "https"
    SOCKS5_TCP = "socks5_tcp"
    SOCKS5_UDP = "socks5_udp"


@dataclass(frozen=True)
class NetworkRule:
    """`network_rule(host, protocol, decision, justification)` after normalisation."""

    host: str
    protocol: NetworkProtocol
    decision: Decision
    justification: str | None = None
    source: RuleSource | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PrefixRuleMatch:
    """A prefix rule matched a command."""

    matched_prefix: tuple[str, ...]
    decision: Decision
    resolved_program: str | None = None
    justification: str | None = None
    # The rule that matched (its pattern and source); not part of the match's identity.
    rule: PrefixRule | None = field(default=None, compare=False, repr=False)

    def debug(self) -> str:
        """Rust-Debug-like rendering used in example-validation errors."""
        prefix = ", ".join(debug_str(t) for t in self.matched_prefix)
        resolved = (
            "None" if self.resolved_program is None else f"Some({debug_str(self.resolved_program)})"
        )
        just = "None" if self.justification is None else f"Some({debug_str(self.justification)})"
        return (
            f"PrefixRuleMatch {{ matched_prefix: [{prefix}], decision: {_title(self.decision)}, "
            f"resolved_program: {resolved}, justification: {just} }}"
        )


@dataclass(frozen=True)
class HeuristicsRuleMatch:
    """No rule matched; the heuristics fallback decided."""

    command: tuple[str, ...]
    decision: Decision


RuleMatch = PrefixRuleMatch | HeuristicsRuleMatch


@dataclass(frozen=True)
class Evaluation:
    """Matches of one or more commands and their strictest decision (None: no match)."""

    decision: Decision | None
    matched_rules: tuple[RuleMatch, ...]

    @classmethod
    def from_matches(cls, matches: tuple[RuleMatch, ...]) -> Evaluation:
        """Evaluation whose decision is the maximum over `matches`."""
        return cls(strictest([m.decision for m in matches]), matches)


@dataclass(frozen=True)
class Policy:
    """A loaded exec policy: prefix rules (definition order), network rules, host executables."""

    rules: tuple[PrefixRule, ...] = ()
    network_rules: tuple[NetworkRule, ...] = ()
    # name -> allowed absolute paths; the last host_executable() for a name wins.
    host_executables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _by_program: dict[str, tuple[PrefixRule, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index: dict[str, list[PrefixRule]] = {}
        for rule in self.rules:
            index.setdefault(rule.first, []).append(rule)
        object.__setattr__(self, "_by_program", {k: tuple(v) for k, v in index.items()})
        object.__setattr__(self, "host_executables", dict(self.host_executables))

    def rules_for(self, program: str) -> tuple[PrefixRule, ...]:
        """Rules keyed by `program`, in definition order."""
        return self._by_program.get(program, ())

    def merged(self, other: Policy) -> Policy:
        """This policy followed by `other` (other's host executables win)."""
        return Policy(
            self.rules + other.rules,
            self.network_rules + other.network_rules,
            {**self.host_executables, **other.host_executables},
        )

    def with_prefix_rule(
        self, prefix: tuple[str, ...], decision: Decision, source: RuleSource | None = None
    ) -> Policy:
        """Add a plain prefix rule (raises ValueError `prefix cannot be empty`)."""
        if not prefix:
            raise ValueError("prefix cannot be empty")
        rule = PrefixRule(prefix[0], tuple((t,) for t in prefix[1:]), decision, source=source)
        return Policy((*self.rules, rule), self.network_rules, self.host_executables)

    def compiled_network_domains(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(allowed, denied) hosts in definition order; the last allow/deny per host wins."""
        last: dict[str, Decision] = {}
        for rule in self.network_rules:
            if rule.decision is Decision.PROMPT:
                # Codex leaves both lists untouched for a prompt rule: an earlier
                # allow or deny of the same host stays in force.
                continue
            last.pop(rule.host, None)  # re-insert so the order follows the latest definition
            last[rule.host] = rule.decision
        allowed = tuple(h for h, d in last.items() if d is Decision.ALLOW)
        denied = tuple(h for h, d in last.items() if d is Decision.FORBIDDEN)
        return allowed, denied


def _title(decision: Decision) -> str:
    return decision.value.capitalize()
