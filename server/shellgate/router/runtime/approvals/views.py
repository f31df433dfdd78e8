"""A parked call as operators see it (`PendingView`): pure, from the call and its parked element."""

from __future__ import annotations

import json
import shlex

from shellgate.router.policy.model import PrefixRuleMatch, RuleMatch
from shellgate.router.projection import CommandElement, PatchElement
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.call.state import AwaitingApproval

__all__ = ["command_text", "pending_view", "rule_text"]

_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-Command", "/c"})


def command_text(argv: tuple[str, ...]) -> str:
    """What a person reads as the command: the script of `shell -c script`, else the words."""
    if len(argv) >= 3 and argv[-2] in _SCRIPT_FLAGS:
        return argv[-1]
    return shlex.join(argv)


def rule_text(match: RuleMatch) -> str:
    """One matched rule as a line: `prefix_rule(["git","push"]) -> prompt`."""
    if isinstance(match, PrefixRuleMatch):
        words = json.dumps(list(match.matched_prefix), separators=(",", ":"))
        return f"prefix_rule({words}) -> {match.decision.value}"
    return f"heuristics({shlex.join(match.command)}) -> {match.decision.value}"


def pending_view(
    awaiting: AwaitingApproval,
    *,
    approval_id: str,
    caller_subject: str,
    created_at_ms: int,
    deadline_ms: int,
) -> PendingView:
    """The operator's view of a parked call (redaction is the caller's job)."""
    parked, subject, call = awaiting.parked, awaiting.parked.subject, awaiting.call
    element = subject.element
    segments: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    summary = ""
    if isinstance(element, CommandElement):
        segments = tuple(shlex.join(c) for c in element.policy.commands)
        outcome = element.approval
        # The deny-side scan re-finds a segment's own match: show each rule once.
        matches = outcome.segment_matches + outcome.scan_matches
        rules = tuple(dict.fromkeys(rule_text(m) for m in matches))
        summary = "; ".join(_display(p) for p in element.display)
    elif isinstance(element, PatchElement):
        summary = "apply_patch"
    name = call.projected.tool_name
    return PendingView(
        approval_id=approval_id,
        thread_id=call.turn.thread_id,
        call_id=call.projected.call_id,
        caller_subject=caller_subject,
        tool=name.name if name is not None else "",
        environment_id=subject.environment_id,
        cwd=subject.cwd,
        command=command_text(subject.argv) if subject.argv else "apply_patch",
        summary=summary,
        kind=parked.kind.value,
        reason=parked.reason,
        segments=segments,
        matched_rules=rules,
        proposed_amendment=parked.amendment or (),
        available_decisions=tuple(d.value for d in parked.offered),
        created_at_ms=created_at_ms,
        deadline_ms=deadline_ms,
    )


def _display(parsed: object) -> str:
    kind = type(parsed).__name__
    path = getattr(parsed, "path", None)
    query = getattr(parsed, "query", None)
    detail = " ".join(str(x) for x in (query, path) if x)
    return f"{kind.lower()}: {detail}" if detail else f"{kind.lower()}: {getattr(parsed, 'cmd', '')}"
