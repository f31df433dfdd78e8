"""shellgate's deny side beyond Codex: normalised matches and the literal-name check.

Both only ever make a decision stricter (docs/rules.md): normalised commands are matched
against prompt and forbidden rules only, and a script whose commands cannot all be known (it
does not lower to plain words) but names the program of a prompt or forbidden rule, with every
other word of the rule's pattern, needs approval instead of running unasked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.router.policy.evaluate import matches_for_command
from shellgate.router.policy.model import Decision, Policy, PrefixRule, PrefixRuleMatch
from shellgate.router.policy.normalize import normalise
from shellgate.router.policy.paths import command_basename


@dataclass(frozen=True, slots=True)
class DenySide:
    """Normalised deny-side matches and the rule an opaque script names (if any)."""

    matches: tuple[PrefixRuleMatch, ...]
    opaque: bool
    named_rule: PrefixRule | None


def _names(rule: PrefixRule, tokens: frozenset[str]) -> bool:
    if rule.first not in tokens and command_basename(rule.first) not in tokens:
        return False
    return all(any(t in tokens for t in alternatives) for alternatives in rule.rest)


def deny_side(policy: Policy, argv: Sequence[str]) -> DenySide:
    """Prompt/forbidden matches of every normalised command, and the literal-name check."""
    if not policy.rules:
        return DenySide((), False, None)
    view = normalise(argv)
    out: list[PrefixRuleMatch] = []
    for cmd in view.commands[1:]:
        for m in matches_for_command(policy, cmd, None, resolve_host_executables=True):
            if isinstance(m, PrefixRuleMatch) and m.decision is not Decision.ALLOW:
                out.append(m)
    named: PrefixRule | None = None
    if view.opaque:
        tokens = set(view.opaque_tokens)
        tokens |= {command_basename(t) for t in tokens if "/" in t}
        frozen = frozenset(tokens)
        named = next(
            (r for r in policy.rules if r.decision is not Decision.ALLOW and _names(r, frozen)),
            None,
        )
    return DenySide(tuple(out), view.opaque, named)


def has_forbidden_rules(policy: Policy) -> bool:
    """Whether any prefix rule forbids (strict mode asks for every opaque script then)."""
    return any(rule.decision is Decision.FORBIDDEN for rule in policy.rules)
