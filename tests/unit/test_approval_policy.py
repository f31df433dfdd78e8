"""The one approval-policy type: canonical form, Rust debug text, the exec policy's fold."""

from __future__ import annotations

import pytest
from shellgate.router.policy import engine_mode
from shellgate.router.policy.approval_policy import ApprovalMode, ApprovalPolicy, GranularApproval
from shellgate.router.runtime.call.orchestrator import sandbox_retry_allowed


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        (ApprovalMode.NEVER, "Never"),
        (ApprovalMode.ON_FAILURE, "OnFailure"),
        (ApprovalMode.ON_REQUEST, "OnRequest"),
        (ApprovalMode.UNLESS_TRUSTED, "UnlessTrusted"),
    ],
)
def test_debug_of_plain_modes(mode: ApprovalMode, text: str) -> None:
    assert ApprovalPolicy(mode).debug() == text


def test_granular_debug_lists_the_actual_switches() -> None:
    policy = ApprovalPolicy(ApprovalMode.GRANULAR, GranularApproval(rules=False))
    assert policy.debug() == (
        "Granular(GranularApprovalConfig { sandbox_approval: true, rules: false, "
        "skill_approval: true, request_permissions: true, mcp_elicitations: true })"
    )


def test_canonical_form() -> None:
    assert ApprovalPolicy(ApprovalMode.GRANULAR) == ApprovalPolicy(
        ApprovalMode.GRANULAR, GranularApproval()
    )
    assert ApprovalPolicy(ApprovalMode.NEVER, GranularApproval()).granular is None
    assert ApprovalPolicy() == ApprovalPolicy(ApprovalMode.ON_REQUEST)


def test_on_failure_is_never_to_the_exec_policy_only() -> None:
    on_failure = ApprovalPolicy(ApprovalMode.ON_FAILURE)
    assert engine_mode(on_failure) is ApprovalMode.NEVER
    assert engine_mode(ApprovalPolicy(ApprovalMode.UNLESS_TRUSTED)) is ApprovalMode.UNLESS_TRUSTED
    # The sandbox-retry offer still tells on-failure from never (spec 06 §3 step 5).
    assert sandbox_retry_allowed(on_failure)
    assert not sandbox_retry_allowed(ApprovalPolicy(ApprovalMode.NEVER))
    no_sandbox = GranularApproval(sandbox_approval=False)
    assert not sandbox_retry_allowed(ApprovalPolicy(ApprovalMode.GRANULAR, no_sandbox))
