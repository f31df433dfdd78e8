"""Conformance functions for `shellgate eval` (area: policy): JSON in, JSON out."""

from __future__ import annotations

import os
from typing import Any

from shellgate.router.cli.conformance import EvalFailure, EvalFn
from shellgate.router.policy import (
    AmendError,
    ApprovalMode,
    ApprovalPolicy,
    Decision,
    Evaluation,
    Forbidden,
    GranularApproval,
    HeuristicsRuleMatch,
    NeedsApproval,
    Policy,
    PrefixRuleMatch,
    RuleMatch,
    RulesLoadError,
    SandboxPermissions,
    SandboxProfile,
    UnmatchedContext,
    WindowsSandboxLevel,
    append_line,
    check_multiple,
    command_might_be_dangerous,
    create_exec_approval_requirement_for_argv,
    derive_requested_execpolicy_amendment,
    is_known_safe_command,
    is_safe_to_call_with_exec,
    match_to_flat_json,
    network_rule_line,
    parse_policy,
    prefix_rule_line,
    render_decision_for_unmatched_command,
)
from shellgate.router.policy_projection import CommandOrigin

_HOME = os.path.expanduser("~")


def _load(text: str | None, path: str = "policy.rules") -> Policy:
    if not text:
        return Policy()
    try:
        return parse_policy(text, path, home=_HOME)
    except RulesLoadError as exc:
        # Codex's error names its place (`broken.rules:1: …`); an example-validation error's
        # text is bare, so its location goes in front, as Codex's structured location does.
        text = exc.text()
        if exc.line is not None and f"{exc.path}:{exc.line}" not in text:
            text = f"{exc.path}:{exc.line}: {text}"
        raise EvalFailure(text, exc.render()) from None


def _flat(evaluation: Evaluation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "matchedRules": [match_to_flat_json(m) for m in evaluation.matched_rules]
    }
    if evaluation.decision is not None:
        out["decision"] = evaluation.decision.value
    return out


def _policy_check(inp: dict[str, Any]) -> dict[str, Any]:
    policy = _load(inp["policy"])
    raw = inp.get("heuristics_fallback")
    fallback_decision = None if raw is None else Decision(raw)
    fallback = None if fallback_decision is None else (lambda _cmd: fallback_decision)
    evaluation = check_multiple(
        policy,
        inp["commands"],
        fallback,
        resolve_host_executables=bool(inp.get("resolve_host_executables", False)),
    )
    return _flat(evaluation)


def _policy_parse_error(text: str) -> dict[str, Any]:
    _load(text, "broken.rules")
    return {"ok": True}


def _network_rules_compile(text: str) -> dict[str, Any]:
    policy = _load(text)
    allowed, denied = policy.compiled_network_domains()
    return {"count": len(policy.network_rules), "allowed": list(allowed), "denied": list(denied)}


def _add_prefix_rule(inp: dict[str, Any]) -> Any:
    base = _load(inp.get("policy"))
    try:
        policy = base.with_prefix_rule(tuple(inp["prefix"]), Decision(inp["decision"]))
    except ValueError as exc:
        return {"error": "InvalidPattern", "message": str(exc)}
    check = inp.get("check")
    if check is None:
        return None
    commands = check if check and isinstance(check[0], list) else [check]
    return _flat(check_multiple(policy, commands, None, resolve_host_executables=False))


def _append_prefix(inp: dict[str, Any]) -> Any:
    text = inp.get("existing") or ""
    try:
        line = prefix_rule_line(inp["prefix"])
    except AmendError as exc:
        return {"error": exc.kind, "message": exc.message}
    for _ in range(int(inp.get("times") or 1)):
        text = append_line(text, line) or text
    return text


def _append_network(inp: dict[str, Any]) -> Any:
    text = inp.get("existing") or ""
    try:
        line = network_rule_line(
            inp["host"], inp["protocol"], inp["decision"], inp.get("justification")
        )
    except AmendError as exc:
        return {"error": exc.kind}
    return append_line(text, line) or text


def approval_policy_from_json(raw: Any) -> ApprovalPolicy:
    """`never` | `on_request` | `unless_trusted` | `on_failure` | {"granular": {...}}."""
    if isinstance(raw, dict):
        g = raw.get("granular", raw)
        return ApprovalPolicy(
            ApprovalMode.GRANULAR,
            GranularApproval(**{k: bool(v) for k, v in g.items()}),
        )
    name = str(raw).replace("-", "_")
    aliases = {"untrusted": "unless_trusted"}
    return ApprovalPolicy(ApprovalMode(aliases.get(name, name)))


def _context(inp: dict[str, Any]) -> UnmatchedContext:
    return UnmatchedContext(
        approval_policy=approval_policy_from_json(inp["approval_policy"]),
        permission_profile=SandboxProfile(inp["permission_profile"]),
        sandbox_permissions=SandboxPermissions(inp.get("sandbox_permissions") or "use_default"),
        windows_sandbox_level=WindowsSandboxLevel(
            inp.get("windows_sandbox_level") or "restricted_token"
        ),
        used_complex_parsing=bool(inp.get("used_complex_parsing", False)),
        command_origin=CommandOrigin(inp.get("command_origin") or "Generic"),
    )


def _render_decision(inp: dict[str, Any]) -> str:
    return render_decision_for_unmatched_command(inp["command"], _context(inp)).value


def _match_from_flat(raw: dict[str, Any]) -> RuleMatch:
    if raw.get("type") == "heuristicsRuleMatch":
        return HeuristicsRuleMatch(tuple(raw["command"]), Decision(raw["decision"]))
    return PrefixRuleMatch(
        tuple(raw["matchedPrefix"]),
        Decision(raw["decision"]),
        raw.get("resolvedProgram"),
        raw.get("justification"),
    )


def _derive_amendment(inp: dict[str, Any]) -> Any:
    matches = [_match_from_flat(m) for m in inp.get("matched_rules") or []]
    found = derive_requested_execpolicy_amendment(inp.get("prefix_rule"), matches)
    return None if found is None else list(found)


def _amendment(value: tuple[str, ...] | None) -> list[str] | None:
    return None if value is None else list(value)


def _create_requirement(inp: dict[str, Any]) -> dict[str, Any]:
    policy = _load(inp.get("policy_src"))
    outcome = create_exec_approval_requirement_for_argv(
        policy, inp["command"], _context(inp), inp.get("prefix_rule")
    )
    req = outcome.requirement
    if isinstance(req, Forbidden):
        return {"type": "forbidden", "reason": req.reason}
    if isinstance(req, NeedsApproval):
        return {
            "type": "needs_approval",
            "reason": req.reason,
            "proposed_execpolicy_amendment": _amendment(req.proposed_execpolicy_amendment),
        }
    return {
        "type": "skip",
        "bypass_sandbox": req.bypass_sandbox,
        "proposed_execpolicy_amendment": _amendment(req.proposed_execpolicy_amendment),
    }


FUNCTIONS: dict[str, EvalFn] = {
    "is_safe_to_call_with_exec": is_safe_to_call_with_exec,
    "is_known_safe_command": is_known_safe_command,
    "command_might_be_dangerous": command_might_be_dangerous,
    "policy_check": _policy_check,
    "policy_parse_error": _policy_parse_error,
    "network_rules_compile": _network_rules_compile,
    "add_prefix_rule": _add_prefix_rule,
    "blocking_append_allow_prefix_rule": _append_prefix,
    "blocking_append_network_rule": _append_network,
    "render_decision_for_unmatched_command": _render_decision,
    "derive_requested_execpolicy_amendment": _derive_amendment,
    "create_exec_approval_requirement": _create_requirement,
}
