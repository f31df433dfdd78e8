"""The one place the operator's view of a parked call (`PendingView`) is built — and redacted.

Every front shows the view built here, as it is: ListPendingApprovals (`service/wire/
approvals.py`), the console (`service/console/views.py`), the webhook body and the audit
`approval_pending` record (`audit.pending_record`). Redaction covers the whole view at this
one place — every text the parked call contributes: command, summary, reason, segments,
matched rules, proposed amendment, cwd, env overrides — so no front can show a secret another hides.
The identifiers (approval, thread, call, subject, environment, tool) are not redacted:
they name things, and a webhook receiver matches its two events on them.

After redaction every such text is made visible (`view_text.visible`): invisible and
bidirectional control characters are escaped (`\\u202e`) and listed in
`hidden_characters`, so no front renders a command other than the one that runs. An
apply_patch lists its files with their change kind and its diff (bounded, the cut marked).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable, Iterable

from shellgate.router.apply_patch.verify import ApplyPatchAction
from shellgate.router.policy.model import PrefixRuleMatch, RuleMatch
from shellgate.router.projection import CommandElement, PatchElement
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.view_text import (
    hidden_names,
    patch_diff,
    patch_files,
    visible,
)
from shellgate.router.runtime.call.state import ApprovalSubject, AwaitingApproval

__all__ = ["Redact", "build_view", "command_text", "rule_text"]

# Replaces configured secret values in a text (the service passes its `Redactor`'s): a
# callable, so the runtime never imports the service layer.
Redact = Callable[[str], str]

_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-Command", "/c"})


def command_text(argv: tuple[str, ...]) -> str:
    """What a person reads as the command: the script of `shell -c script`, else the words."""
    if len(argv) >= 3 and argv[-2] in _SCRIPT_FLAGS:
        return argv[-1]
    return shlex.join(argv)


def rule_text(match: RuleMatch, redact: Redact | None = None) -> str:
    """One matched rule as a line: `prefix_rule(["git","push"]) -> prompt` (each word
    passed through `redact` before it is quoted)."""
    redact = redact or _same
    if isinstance(match, PrefixRuleMatch):
        words = json.dumps([redact(w) for w in match.matched_prefix], separators=(",", ":"))
        return f"prefix_rule({words}) -> {match.decision.value}"
    return f"heuristics({shlex.join(redact(w) for w in match.command)}) -> {match.decision.value}"


def build_view(
    awaiting: AwaitingApproval,
    *,
    approval_id: str,
    caller_subject: str,
    created_at_ms: int,
    deadline_ms: int,
    redact: Redact | None,
) -> PendingView:
    """The operator's view of a parked call, every text passed through `redact` (None: no
    secrets configured)."""
    text = redact or _same

    def words(argv: Iterable[str]) -> tuple[str, ...]:
        # Word by word before any quoting: shlex and JSON escape a secret's quotes or
        # non-ASCII characters, and the escaped form would no longer match the value.
        return tuple(text(word) for word in argv)

    def joined(argv: Iterable[str]) -> str:
        return text(shlex.join(words(argv)))

    parked, subject, call = awaiting.parked, awaiting.parked.subject, awaiting.call
    element = subject.element
    segments: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    summary = ""
    overrides: tuple[str, ...] = ()
    if isinstance(element, CommandElement):
        overrides = tuple(
            f"{text(k)}={text(v)}" if v is not None else f"unset {text(k)}"
            for k, v in element.resolution_env
        )
        segments = tuple(joined(c) for c in element.policy.commands)
        outcome = element.approval
        # The deny-side scan re-finds a segment's own match: show each rule once.
        matches = outcome.segment_matches + outcome.scan_matches
        rules = tuple(dict.fromkeys(text(rule_text(m, text)) for m in matches))
        summary = text("; ".join(_display(p) for p in element.display))
    elif isinstance(element, PatchElement):
        summary = "apply_patch"
    files: tuple[str, ...] = ()
    diff = ""
    action = _patch_action(subject)
    if action is not None:
        files = tuple(text(f) for f in patch_files(action))
        diff = text(patch_diff(action))
        summary = f"apply_patch: {len(files)} file(s)"
    name = call.projected.tool_name
    raw = PendingView(
        approval_id=approval_id,
        thread_id=call.turn.thread_id,
        call_id=call.projected.call_id,
        caller_subject=caller_subject,
        tool=name.name if name is not None else "",
        environment_id=subject.environment_id,
        cwd=text(subject.cwd),
        command=text(command_text(words(subject.argv))) if subject.argv else "apply_patch",
        summary=summary,
        kind=parked.kind.value,
        reason=text(parked.reason),
        segments=segments,
        matched_rules=rules,
        proposed_amendment=words(parked.amendment or ()),
        available_decisions=parked.offered,
        created_at_ms=created_at_ms,
        deadline_ms=deadline_ms,
        patch_files=files,
        patch_diff=diff,
        env_overrides=overrides,
    )
    return _made_visible(raw)


def _patch_action(subject: ApprovalSubject) -> ApplyPatchAction | None:
    if subject.patch is not None:
        return subject.patch
    element = subject.element
    if isinstance(element, PatchElement) and isinstance(element.result, ApplyPatchAction):
        return element.result
    return None


def _made_visible(view: PendingView) -> PendingView:
    """`view` with every displayed text escaped (`visible`) and what was hidden listed."""
    singles = ("cwd", "command", "summary", "reason", "patch_diff")
    lists = ("segments", "matched_rules", "proposed_amendment", "patch_files", "env_overrides")
    texts = [getattr(view, f) for f in singles]
    texts += [item for f in lists for item in getattr(view, f)]
    found = hidden_names(texts)
    if not found:
        return view
    changes: dict[str, object] = {f: visible(getattr(view, f)) for f in singles}
    changes.update({f: tuple(visible(i) for i in getattr(view, f)) for f in lists})
    return dataclasses.replace(view, hidden_characters=found, **changes)  # type: ignore[arg-type]


def _same(text: str) -> str:
    return text


def _display(parsed: object) -> str:
    kind = type(parsed).__name__
    path = getattr(parsed, "path", None)
    query = getattr(parsed, "query", None)
    detail = " ".join(str(x) for x in (query, path) if x)
    return (
        f"{kind.lower()}: {detail}" if detail else f"{kind.lower()}: {getattr(parsed, 'cmd', '')}"
    )
