"""What an approval offers, and the one check that a decision is on offer.

Three places take a decision: the call state machine (`call/state.py`, `Parked.answer`),
a caller's resume before it re-projects the stored call (`call/execute.py`), and an
operator's decision on the board (`operator_wait.BoardDesk.decide`). All three ask
`require_offered`, so the rule and its INVALID_ARGUMENT text exist once.
"""

from __future__ import annotations

from collections.abc import Collection

from shellgate.common.errors import InvalidArgumentError
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision

__all__ = ["offered_decisions", "require_offered"]


def offered_decisions(amendment: tuple[str, ...] | None) -> tuple[ApprovalDecision, ...]:
    """The decisions on offer, in display order; `approved_with_amendment` only with one."""
    offer = [ApprovalDecision.APPROVED, ApprovalDecision.APPROVED_FOR_SESSION]
    if amendment:
        offer.append(ApprovalDecision.APPROVED_WITH_AMENDMENT)
    offer += [ApprovalDecision.DENIED, ApprovalDecision.ABORT]
    return tuple(offer)


def require_offered(decision: ApprovalDecision, offered: Collection[ApprovalDecision]) -> None:
    """INVALID_ARGUMENT unless `decision` is one of `offered`."""
    if decision not in offered:
        raise InvalidArgumentError(f"decision: {decision} is not on offer")
