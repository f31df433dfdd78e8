"""The approval route's precedence (docs/approvals.md): environment over router default;
a turn can only escalate caller → operator."""

from __future__ import annotations


def test_route_precedence_turn_only_escalates() -> None:
    from shellgate.router.runtime.approvals.board import InMemoryBoard
    from shellgate.router.runtime.approvals.operator_wait import OperatorApprovals, OperatorSettings

    settings = OperatorSettings(
        default_route="caller", environment_routes=(("prod", "operator"), ("dev", "caller"))
    )
    route = OperatorApprovals(settings, InMemoryBoard(), instance_id="r")
    assert route.routed(False, "prod") and route.routed(True, "prod")
    assert not route.routed(False, "dev") and route.routed(True, "dev")
    assert not route.routed(False, "local") and route.routed(True, "local")
    strict = OperatorApprovals(
        OperatorSettings(default_route="operator", environment_routes=(("dev", "caller"),)),
        InMemoryBoard(),
        instance_id="r",
    )
    assert strict.routed(False, "local") and not strict.routed(False, "dev")
