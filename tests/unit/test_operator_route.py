"""The approval route's precedence (docs/approvals.md): environment over router default;
a turn can only escalate caller → operator; no operator route: every approval is the caller's."""

from __future__ import annotations


def test_route_precedence_turn_only_escalates() -> None:
    from shellgate.router.runtime.approvals.route import approval_route
    from shellgate.router.runtime.approvals.settings import OperatorSettings
    from shellgate.router.runtime.approvals.vocabulary import ApprovalRoute

    caller, operator = ApprovalRoute.CALLER, ApprovalRoute.OPERATOR
    settings = OperatorSettings(
        default_route=caller, environment_routes=(("prod", operator), ("dev", caller))
    )
    assert approval_route(settings, "prod", False) is operator
    assert approval_route(settings, "prod", True) is operator
    assert approval_route(settings, "dev", False) is caller
    assert approval_route(settings, "dev", True) is operator
    assert approval_route(settings, "local", False) is caller
    assert approval_route(settings, "local", True) is operator
    strict = OperatorSettings(default_route=operator, environment_routes=(("dev", caller),))
    assert approval_route(strict, "local", False) is operator
    assert approval_route(strict, "dev", False) is caller
    assert approval_route(None, "prod", True) is caller
