"""What the orchestrator tells the audit log: one record per decision and per outcome.

The runtime only builds plain dict records and hands them to an `AuditSink`
(service/audit_log.py writes them hash-chained to a file, off the event loop); with no
sink configured nothing is built. Records never carry output, only the command (which the
sink may drop or redact) and the facts of the decision and the end.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from shellgate.common.sandbox import SandboxSpec
from shellgate.router.policy.evaluate import match_to_flat_json
from shellgate.router.policy.model import PrefixRuleMatch, RuleMatch
from shellgate.router.policy.requirement import ApprovalOutcome
from shellgate.router.projection import CommandElement, PatchElement
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalRoute,
    AuditDecision,
    DecisionSource,
)
from shellgate.router.runtime.call.events import Termination
from shellgate.router.runtime.call.state import Aborted, ApprovalSubject, Finished

__all__ = [
    "AuditCall",
    "AuditNotes",
    "AuditSink",
    "AuditTee",
    "AuditTrail",
    "decision_record",
    "environment_host",
    "matched_rules",
    "outcome_record",
    "pending_record",
    "sandbox_name",
]

# Signals are reported as 128 + n by the process layer (as a shell does).
_SIGNAL_BASE = 128


class AuditSink(Protocol):
    """Takes audit records; must not block the caller on disk."""

    def record(self, entry: dict[str, Any]) -> None:
        """Queue one record (a JSON-able dict without time, sequence or chain fields)."""
        ...


class AuditTee:
    """Hands every record to several sinks (the audit file, the decision metrics)."""

    def __init__(self, *sinks: AuditSink) -> None:
        self.sinks = sinks

    def record(self, entry: dict[str, Any]) -> None:
        """Give `entry` to every sink."""
        for sink in self.sinks:
            sink.record(entry)


@dataclass
class AuditNotes:
    """What one element's orchestration decided, filled in as it goes (mutable collector)."""

    decision: AuditDecision | None = None
    source: DecisionSource | None = None
    reason: str = ""
    amendment: tuple[str, ...] | None = None
    # Who decided an approval (the operator's subject); empty: the caller.
    who: str = ""
    sandbox: str = "none"
    sandbox_retry: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditCall:
    """Who and what an element belongs to (the same for its decision and outcome)."""

    thread_id: str
    call_id: str
    subject: str
    tool: str
    element_index: int


def environment_host(environment: Any) -> str:
    """Where an environment runs: a remote daemon's target, else this host's name."""
    target = getattr(getattr(environment, "config", None), "target", None)
    return str(target) if target else socket.gethostname()


def _element_fields(subject: ApprovalSubject, digest: str, host: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "environment": {
            "id": subject.environment_id,
            "host": host,
            "shell": subject.argv[0] if subject.argv else "",
        },
        "cwd": subject.cwd,
        "command_digest": digest,
        "command": list(subject.argv),
    }
    element = subject.element
    if isinstance(element, CommandElement):
        outcome = element.approval
        fields["segments"] = [list(c) for c in element.policy.commands]
        fields["matched_rules"] = matched_rules(outcome)
    elif isinstance(element, PatchElement):
        fields["segments"] = []
        fields["matched_rules"] = []
    return fields


def _match_record(match: RuleMatch, segment: int | None) -> dict[str, Any]:
    entry = match_to_flat_json(match)
    # None: a deny-side scan match (a command unwrapped from the argv, not a segment).
    entry["segment"] = segment
    rule = match.rule if isinstance(match, PrefixRuleMatch) else None
    if rule is not None:
        entry["pattern"] = rule.pattern()
        if rule.source is not None:
            entry["file"], entry["line"] = rule.source.file, rule.source.line
    return entry


def matched_rules(outcome: ApprovalOutcome) -> list[dict[str, Any]]:
    """Every match behind an element's requirement, with its segment and rule's file:line."""
    segments: list[int | None] = [
        index for index, count in enumerate(outcome.segment_counts) for _ in range(count)
    ]
    if len(segments) != len(outcome.segment_matches):
        segments = [None] * len(outcome.segment_matches)  # counts unknown: no attribution
    out = [_match_record(m, s) for m, s in zip(outcome.segment_matches, segments, strict=True)]
    return out + [_match_record(m, None) for m in outcome.scan_matches]


def _base(call: AuditCall, kind: str) -> dict[str, Any]:
    return {
        "type": kind,
        "thread": call.thread_id,
        "call_id": call.call_id,
        "element": call.element_index,
        "subject": call.subject,
        "tool": call.tool,
    }


def decision_record(
    call: AuditCall, subject: ApprovalSubject, digest: str, notes: AuditNotes, host: str = ""
) -> dict[str, Any]:
    """The record of what was decided about one element, and by whom."""
    entry = _base(call, "decision")
    entry.update(_element_fields(subject, digest, host))
    entry["decision"] = notes.decision
    entry["reason"] = notes.reason
    approval: dict[str, Any] = {"source": notes.source}
    if notes.source in (DecisionSource.CALLER, DecisionSource.OPERATOR):
        # The caller answered its own ResumeCall; an operator is named by its subject.
        approval["who"] = notes.who or call.subject
    if notes.amendment:
        approval["amendment"] = list(notes.amendment)
    entry["approval"] = approval
    entry.update(notes.extra)
    return entry


def pending_record(view: PendingView, element_index: int) -> dict[str, Any]:
    """The record of a new approval on the board (operator-routed, or a live caller
    approval: route `caller`), from its one (redacted) view."""
    return {
        "type": "approval_pending",
        "route": ApprovalRoute.CALLER if view.caller_decides else ApprovalRoute.OPERATOR,
        "approval_id": view.approval_id,
        "thread": view.thread_id,
        "call_id": view.call_id,
        "element": element_index,
        "subject": view.caller_subject,
        "tool": view.tool,
        "environment": {"id": view.environment_id},
        "cwd": view.cwd,
        "command": view.command,
        "kind": view.kind,
        "reason": view.reason,
        "deadline_ms": view.deadline_ms,
    }


def outcome_record(
    call: AuditCall,
    subject: ApprovalSubject,
    digest: str,
    notes: AuditNotes,
    result: Finished | Aborted,
    duration_ms: int,
) -> dict[str, Any]:
    """The record of how one element ended."""
    entry = _base(call, "outcome")
    entry["environment"] = {"id": subject.environment_id}
    entry["command_digest"] = digest
    entry["sandbox"] = notes.sandbox
    entry["sandbox_retry"] = notes.sandbox_retry
    entry["duration_ms"] = duration_ms
    if isinstance(result, Aborted):
        entry.update(termination=Termination.CANCELLED.value, exit_code=None, signal=None)
        return entry
    signal = None
    if result.termination is Termination.SIGNALED and result.exit_code is not None:
        signal = result.exit_code - _SIGNAL_BASE if result.exit_code > _SIGNAL_BASE else None
    entry.update(
        termination=result.termination.value,
        exit_code=result.exit_code,
        signal=signal,
        timed_out=result.termination is Termination.TIMED_OUT,
        truncated=result.truncated,
        original_token_count=result.original_token_count,
    )
    return entry


def sandbox_name(spec: SandboxSpec) -> str:
    """The sandbox profile an attempt ran under, as the audit log names it."""
    return str(spec.mode.value)


class AuditTrail:
    """One element's audit: writes its decision when made and its outcome when it ends."""

    def __init__(
        self,
        sink: AuditSink | None,
        call: AuditCall,
        subject: ApprovalSubject,
        digest: str,
        host: str = "",
    ) -> None:
        self.sink = sink
        self.host = host
        self.call = call
        self.subject = subject
        self.digest = digest
        self.notes = AuditNotes()
        self.started = time.monotonic()

    def decide(
        self,
        decision: AuditDecision,
        source: DecisionSource,
        reason: str = "",
        amendment: tuple[str, ...] | None = None,
        who: str = "",
        **extra: Any,
    ) -> None:
        """Record a decision about the element (allow, ask, forbidden, approved, denied…)."""
        notes = self.notes
        notes.decision, notes.source, notes.reason, notes.amendment, notes.who = (
            decision, source, reason, amendment, who,
        )  # fmt: skip
        notes.extra = extra
        if self.sink is not None:
            record = decision_record(self.call, self.subject, self.digest, notes, self.host)
            self.sink.record(record)

    def ended(self, result: Finished | Aborted, **extra: Any) -> None:
        """Record how the element (or one attempt of it) ended."""
        if self.sink is None:
            return
        duration_ms = round((time.monotonic() - self.started) * 1000)
        entry = outcome_record(
            self.call, self.subject, self.digest, self.notes, result, duration_ms
        )
        entry.update(extra)
        self.sink.record(entry)
