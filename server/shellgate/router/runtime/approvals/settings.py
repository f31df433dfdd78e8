"""`[approvals]` as the runtime uses it: routes, deadline, keepalive, poll, fallback."""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision, ApprovalRoute

__all__ = ["OperatorSettings"]


@dataclass(frozen=True)
class OperatorSettings:
    """The operator route's settings (built from the config by service/operator_setup.py)."""

    default_route: ApprovalRoute = ApprovalRoute.CALLER
    # environment id → its configured route (environments without one are left out).
    environment_routes: tuple[tuple[str, ApprovalRoute], ...] = ()
    deadline_ms: int = 10 * 60 * 1000
    keepalive_ms: int = 15_000
    poll_ms: int = 1_000
    # What the deadline decides (`deadline_fallback`): DENIED ("deny") or ABORT ("abort").
    fallback: ApprovalDecision = ApprovalDecision.DENIED
