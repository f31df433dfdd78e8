"""Rule matching and evaluation (spec 04 §2): exact program, host-executable fallback, max."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shellgate.router.policy.model import (
    Decision,
    Evaluation,
    HeuristicsRuleMatch,
    Policy,
    PrefixRuleMatch,
    RuleMatch,
)
from shellgate.router.policy.paths import normalize_absolute, path_basename

Fallback = Callable[[tuple[str, ...]], Decision]


def _exact(policy: Policy, cmd: tuple[str, ...]) -> list[RuleMatch]:
    out: list[RuleMatch] = []
    for rule in policy.rules_for(cmd[0]):
        prefix = rule.matches(cmd)
        if prefix is not None:
            out.append(PrefixRuleMatch(prefix, rule.decision, None, rule.justification, rule))
    return out


def _host_executable(policy: Policy, cmd: tuple[str, ...]) -> list[RuleMatch]:
    if not cmd[0].startswith("/"):
        return []
    program = normalize_absolute(cmd[0])
    basename = path_basename(program)
    if basename is None or not policy.rules_for(basename):
        return []
    allowed = policy.host_executables.get(basename)
    # A host_executable() entry gates the fallback; an explicit empty list blocks it.
    if allowed is not None and program not in allowed:
        return []
    renamed = (basename, *cmd[1:])
    out: list[RuleMatch] = []
    for rule in policy.rules_for(basename):
        prefix = rule.matches(renamed)
        if prefix is not None:
            out.append(PrefixRuleMatch(prefix, rule.decision, program, rule.justification, rule))
    return out


def matches_for_command(
    policy: Policy,
    cmd: Sequence[str],
    fallback: Fallback | None,
    *,
    resolve_host_executables: bool,
) -> tuple[RuleMatch, ...]:
    """Matches of one command; exact matches win over basename matches, then the fallback."""
    command = tuple(cmd)
    found: list[RuleMatch] = _exact(policy, command) if command else []
    if not found and command and resolve_host_executables:
        found = _host_executable(policy, command)
    if not found and fallback is not None:
        return (HeuristicsRuleMatch(command, fallback(command)),)
    return tuple(found)


def check_multiple(
    policy: Policy,
    commands: Iterable[Sequence[str]],
    fallback: Fallback | None,
    *,
    resolve_host_executables: bool,
) -> Evaluation:
    """Concatenate every command's matches in order; the strictest decision wins."""
    matches: list[RuleMatch] = []
    for cmd in commands:
        matches.extend(
            matches_for_command(
                policy, cmd, fallback, resolve_host_executables=resolve_host_executables
            )
        )
    return Evaluation.from_matches(tuple(matches))


def match_to_json(match: RuleMatch) -> dict[str, Any]:
    """The Codex JSON form of one match (`{"prefixRuleMatch": {...}}`)."""
    if isinstance(match, HeuristicsRuleMatch):
        return {
            "heuristicsRuleMatch": {
                "command": list(match.command),
                "decision": match.decision.value,
            }
        }
    body: dict[str, Any] = {
        "matchedPrefix": list(match.matched_prefix),
        "decision": match.decision.value,
    }
    if match.resolved_program is not None:
        body["resolvedProgram"] = match.resolved_program
    if match.justification is not None:
        body["justification"] = match.justification
    return {"prefixRuleMatch": body}


def match_to_flat_json(match: RuleMatch) -> dict[str, Any]:
    """A match flattened to `{"type": "prefixRuleMatch"|"heuristicsRuleMatch", …fields}`."""
    ((kind, body),) = match_to_json(match).items()
    return {"type": kind, **body}


def evaluation_to_json(evaluation: Evaluation) -> dict[str, Any]:
    """The `codex execpolicy check` JSON: matchedRules, then decision when there is one."""
    out: dict[str, Any] = {"matchedRules": [match_to_json(m) for m in evaluation.matched_rules]}
    if evaluation.decision is not None:
        out["decision"] = evaluation.decision.value
    return out
