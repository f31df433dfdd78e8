"""Which route an approval takes (docs/approvals.md, "Choosing the route"): the one decision.

`approval_route` decides it when an element parks (`call/runner.py`). Later, a caller's
resume asks `route_taken`, which reads back where that decision put the approval (an
operator-routed one is on the board) instead of deciding again: the configuration or the
turn may have changed since, and the route an approval took is a fact, not a setting.
"""

from __future__ import annotations

from shellgate.router.runtime.approvals.board import OperatorBoard
from shellgate.router.runtime.approvals.settings import OperatorSettings
from shellgate.router.runtime.approvals.vocabulary import ApprovalRoute

__all__ = ["approval_route", "route_taken"]


def approval_route(
    settings: OperatorSettings | None, environment_id: str, turn_escalates: bool
) -> ApprovalRoute:
    """The route of an approval in `environment_id`; None: this router has no operator route.

    The environment's route (else the router default) binds; a turn can only escalate
    caller → operator, never downgrade an operator route: the route protects the
    environment from its callers.
    """
    if settings is None:
        return ApprovalRoute.CALLER
    configured = dict(settings.environment_routes).get(environment_id, settings.default_route)
    if configured == ApprovalRoute.OPERATOR or turn_escalates:
        return ApprovalRoute.OPERATOR
    return ApprovalRoute.CALLER


async def route_taken(board: OperatorBoard | None, approval_id: str) -> ApprovalRoute:
    """The route an existing approval took: OPERATOR when it is on the board (any replica)."""
    if board is not None and await board.get(approval_id) is not None:
        return ApprovalRoute.OPERATOR
    return ApprovalRoute.CALLER
