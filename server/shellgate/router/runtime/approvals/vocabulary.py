"""The words of approvals, typed: decisions, who made them, routes, board statuses.

StrEnums on purpose: each member *is* its string, so the values that cross the wire, the
audit file, the webhook body and Redis keep their bytes (`json.dumps`, `str.encode`, the
record seals and redis-py all see the plain string). Only the edges convert: protobuf
enums in `service/wire/`, TOML strings in `service/operator_setup.py`, form fields in
the console. This module imports nothing, so every layer of the runtime may use it.
"""

from __future__ import annotations

import enum

__all__ = [
    "ApprovalDecision",
    "ApprovalRoute",
    "AuditDecision",
    "BoardStatus",
    "DecisionSource",
    "SettleOutcome",
]


class ApprovalDecision(enum.StrEnum):
    """An answer to an approval (ResumeCall, DecideApproval), in display order."""

    APPROVED = "approved"
    APPROVED_FOR_SESSION = "approved_for_session"
    APPROVED_WITH_AMENDMENT = "approved_with_amendment"
    DENIED = "denied"
    ABORT = "abort"


class DecisionSource(enum.StrEnum):
    """Who or what decided about an element (audit `approval.source`, metrics, webhook)."""

    POLICY = "policy"  # the turn's approval policy and the heuristics
    RULE = "rule"  # a prefix rule allowed it
    CACHED_GRANT = "cached_grant"  # approved for the session earlier
    CALLER = "caller"  # the caller's ResumeCall (or the caller left)
    OPERATOR = "operator"  # an operator through ApprovalService or the console
    DEADLINE = "deadline"  # the operator deadline's fallback
    INTERRUPT = "interrupt"  # Interrupt reached a call waiting for an operator


class ApprovalRoute(enum.StrEnum):
    """Who decides an approval (docs/approvals.md, "Choosing the route")."""

    CALLER = "caller"  # the Execute stream ends with approval_required
    OPERATOR = "operator"  # the stream stays open until an operator decides


class BoardStatus(enum.StrEnum):
    """Where an operator approval stands; a board entry moves once, away from PENDING."""

    PENDING = "pending"
    DECIDED = "decided"  # an operator decided
    EXPIRED = "expired"  # the deadline's fallback decided
    # Never stored (a withdrawn entry is deleted): only told, by the approval_settled webhook.
    WITHDRAWN = "withdrawn"


class SettleOutcome(enum.StrEnum):
    """How one attempt to settle a board entry went (the Redis script returns these words)."""

    OK = "ok"
    MISSING = "missing"  # withdrawn or gone
    DECIDED = "decided"  # someone else decided first
    EXPIRED = "expired"  # past the deadline, or the fallback settled it


class AuditDecision(enum.StrEnum):
    """What an audit `decision` record says was decided about one element."""

    ALLOW = "allow"
    ASK = "ask"
    FORBIDDEN = "forbidden"
    REJECTED = "rejected"
    APPROVED = "approved"
    DENIED = "denied"
    ABORT = "abort"
