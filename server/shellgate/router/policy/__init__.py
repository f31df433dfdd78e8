"""Exec policy: `.rules` language, matching, heuristics and the approval requirement."""

from shellgate.router.policy.amendments import (
    AmendError,
    append_line,
    network_rule_line,
    prefix_rule_line,
)
from shellgate.router.policy.banned import BANNED_PREFIX_SUGGESTIONS, is_banned_prefix
from shellgate.router.policy.context import (
    ApprovalMode,
    ApprovalPolicy,
    GranularApproval,
    SandboxPermissions,
    SandboxProfile,
    UnmatchedContext,
    WindowsSandboxLevel,
    engine_mode,
)
from shellgate.router.policy.dangerous import command_might_be_dangerous, forced_rm
from shellgate.router.policy.evaluate import (
    check_multiple,
    evaluation_to_json,
    match_to_flat_json,
    match_to_json,
    matches_for_command,
)
from shellgate.router.policy.model import (
    SHARED_SOURCE,
    Decision,
    Evaluation,
    HeuristicsRuleMatch,
    NetworkProtocol,
    NetworkRule,
    Policy,
    PrefixRule,
    PrefixRuleMatch,
    RuleMatch,
    RuleSource,
)
from shellgate.router.policy.requirement import (
    ApprovalOutcome,
    ExecApprovalRequirement,
    Forbidden,
    NeedsApproval,
    Skip,
    create_exec_approval_requirement,
    create_exec_approval_requirement_for_argv,
    derive_requested_execpolicy_amendment,
    render_decision_for_unmatched_command,
    scan_matches,
)
from shellgate.router.policy.rules_errors import RulesLoadError
from shellgate.router.policy.rules_lang import load_rules, parse_policy
from shellgate.router.policy.safe_commands import is_known_safe_command, is_safe_to_call_with_exec
from shellgate.router.policy.unwrap import MAX_UNWRAP_DEPTH, unwrapped_commands

__all__ = [
    "BANNED_PREFIX_SUGGESTIONS",
    "MAX_UNWRAP_DEPTH",
    "SHARED_SOURCE",
    "AmendError",
    "ApprovalMode",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "Decision",
    "Evaluation",
    "ExecApprovalRequirement",
    "Forbidden",
    "GranularApproval",
    "HeuristicsRuleMatch",
    "NeedsApproval",
    "NetworkProtocol",
    "NetworkRule",
    "Policy",
    "PrefixRule",
    "PrefixRuleMatch",
    "RuleMatch",
    "RuleSource",
    "RulesLoadError",
    "SandboxPermissions",
    "SandboxProfile",
    "Skip",
    "UnmatchedContext",
    "WindowsSandboxLevel",
    "append_line",
    "check_multiple",
    "command_might_be_dangerous",
    "create_exec_approval_requirement",
    "create_exec_approval_requirement_for_argv",
    "derive_requested_execpolicy_amendment",
    "engine_mode",
    "evaluation_to_json",
    "forced_rm",
    "is_banned_prefix",
    "is_known_safe_command",
    "is_safe_to_call_with_exec",
    "load_rules",
    "match_to_flat_json",
    "match_to_json",
    "matches_for_command",
    "network_rule_line",
    "parse_policy",
    "prefix_rule_line",
    "render_decision_for_unmatched_command",
    "scan_matches",
    "unwrapped_commands",
]
