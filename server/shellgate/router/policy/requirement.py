"""The unmatched-command fallback and `ExecApprovalRequirement` derivation (spec 04 §4, §5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from shellgate.router.bash.shlex_rs import join_for_display
from shellgate.router.policy.banned import is_banned_prefix
from shellgate.router.policy.context import (
    ApprovalMode,
    ApprovalPolicy,
    UnmatchedContext,
    engine_mode,
)
from shellgate.router.policy.dangerous import command_might_be_dangerous
from shellgate.router.policy.deny_side import deny_side, has_forbidden_rules
from shellgate.router.policy.evaluate import check_multiple, matches_for_command
from shellgate.router.policy.model import (
    Decision,
    Evaluation,
    HeuristicsRuleMatch,
    Policy,
    PrefixRule,
    PrefixRuleMatch,
    RuleMatch,
    strictest,
)
from shellgate.router.policy.safe_commands import is_known_safe_command
from shellgate.router.policy.unwrap import unwrapped_commands
from shellgate.router.policy_projection import (
    CommandOrigin,
    PolicyProjection,
    commands_for_exec_policy,
    extract_bash_command,
    parse_shell_lc_literal_commands,
)

NEVER_REASON = "approval required by policy, but AskForApproval is set to Never"
GRANULAR_RULES_REASON = (
    "approval required by policy rule, but AskForApproval::Granular.rules is false"
)
GRANULAR_SANDBOX_REASON = (
    "approval required by policy, but AskForApproval::Granular.sandbox_approval is false"
)


@dataclass(frozen=True)
class Skip:
    """Run without asking; `bypass_sandbox` when every segment is explicitly allowed."""

    bypass_sandbox: bool
    proposed_execpolicy_amendment: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NeedsApproval:
    """Ask the user first."""

    reason: str | None
    proposed_execpolicy_amendment: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Forbidden:
    """Do not run."""

    reason: str


ExecApprovalRequirement = Skip | NeedsApproval | Forbidden


@dataclass(frozen=True)
class ApprovalOutcome:
    """The requirement plus the matches behind it, reported separately (spec 03 §E)."""

    requirement: ExecApprovalRequirement
    segment_matches: tuple[RuleMatch, ...]
    scan_matches: tuple[PrefixRuleMatch, ...]
    # How many of `segment_matches` each segment contributed, in order (for the audit log).
    segment_counts: tuple[int, ...] = ()


def render_decision_for_unmatched_command(
    command: Sequence[str],
    ctx: UnmatchedContext,
    literal_commands: Sequence[Sequence[str]] | None = None,
) -> Decision:
    """The heuristics decision for a command no prefix rule matched (spec 04 §4)."""
    mode = engine_mode(ctx.approval_policy)
    # W: Windows host without a sandbox backend but with a managed, restricted profile.
    w = (
        ctx.windows_host
        and ctx.windows_sandbox_level == "disabled"
        and ctx.permission_profile.restricted
    )
    if (
        not ctx.used_complex_parsing
        and (mode is ApprovalMode.UNLESS_TRUSTED or w)
        and ctx.command_origin is CommandOrigin.GENERIC
        and is_known_safe_command(command)
    ):
        return Decision.ALLOW
    dangerous = ctx.command_origin is CommandOrigin.GENERIC and command_might_be_dangerous(
        command, literal_commands
    )
    if dangerous or w:
        return Decision.FORBIDDEN if mode is ApprovalMode.NEVER else Decision.PROMPT
    if mode is ApprovalMode.NEVER:
        return Decision.ALLOW
    if mode is ApprovalMode.UNLESS_TRUSTED:
        return Decision.PROMPT
    if ctx.permission_profile.restricted and ctx.sandbox_permissions.requests_override:
        return Decision.PROMPT
    return Decision.ALLOW


def derive_requested_execpolicy_amendment(
    prefix_rule: Sequence[str] | None, matched_rules: Sequence[RuleMatch]
) -> tuple[str, ...] | None:
    """The model's `prefix_rule` hint unless absent, empty, banned, or a prefix rule matched."""
    if not prefix_rule:
        return None
    hint = tuple(prefix_rule)
    if is_banned_prefix(hint):
        return None
    if any(isinstance(m, PrefixRuleMatch) for m in matched_rules):
        return None
    return hint


def scan_matches(
    policy: Policy,
    argv: Sequence[str],
    literal_commands: Sequence[Sequence[str]] | None = None,
) -> tuple[PrefixRuleMatch, ...]:
    """Deny-side rule scan (spec 04 §2.1): prompt/forbidden matches of every unwrapped command."""
    out: list[PrefixRuleMatch] = []
    for cmd in unwrapped_commands(argv, literal_commands):
        for m in matches_for_command(policy, cmd, None, resolve_host_executables=True):
            if isinstance(m, PrefixRuleMatch) and m.decision is not Decision.ALLOW:
                out.append(m)
    return tuple(out)


def _most_specific(matches: Sequence[RuleMatch], decision: Decision) -> PrefixRuleMatch | None:
    best: PrefixRuleMatch | None = None
    for m in matches:
        # `>=`: on a tie the later match wins (scan matches come after segment matches).
        if (
            isinstance(m, PrefixRuleMatch)
            and m.decision is decision
            and (best is None or len(m.matched_prefix) >= len(best.matched_prefix))
        ):
            best = m
    return best


def _prompt_rejection(policy: ApprovalPolicy, prompt_is_rule: bool) -> str | None:
    mode = engine_mode(policy)
    if mode is ApprovalMode.NEVER:
        return NEVER_REASON
    granular = policy.granular
    if granular is not None:
        if prompt_is_rule and not granular.rules:
            return GRANULAR_RULES_REASON
        if not prompt_is_rule and not granular.sandbox_approval:
            return GRANULAR_SANDBOX_REASON
    return None


def create_exec_approval_requirement(
    policy: Policy,
    argv: Sequence[str],
    projection: PolicyProjection,
    literal_commands: Sequence[Sequence[str]] | None,
    ctx: UnmatchedContext,
    prefix_rule: Sequence[str] | None = None,
    *,
    strict_unlowerable: bool = False,
) -> ApprovalOutcome:
    """Derive the ExecApprovalRequirement of one handler argv (spec 04 §5.1).

    `projection` is `commands_for_exec_policy(argv)` and `literal_commands` the literal-command
    scan of `argv` (None when it is not a bash/zsh/sh wrapper or does not parse). Beyond Codex,
    normalised commands meet prompt/forbidden rules and an opaque script naming a denied
    program needs approval; `strict_unlowerable` makes every opaque script ask while any rule
    forbids (docs/rules.md).
    """
    if (
        ctx.used_complex_parsing != projection.used_complex_parsing
        or ctx.command_origin is not projection.command_origin
    ):
        ctx = replace(
            ctx,
            used_complex_parsing=projection.used_complex_parsing,
            command_origin=projection.command_origin,
        )
    auto = not projection.used_complex_parsing
    commands = projection.commands

    whole = tuple(argv)

    def fallback(cmd: tuple[str, ...]) -> Decision:
        # The fallback segment is the wrapper argv itself: reuse its scan instead of re-parsing.
        return render_decision_for_unmatched_command(
            cmd, ctx, literal_commands if cmd == whole else None
        )

    # check_multiple, keeping each command's matches: the Skip branch asks per command
    # whether an allow rule matched (the fallback never adds a prefix-rule match).
    per_command = [
        matches_for_command(policy, c, fallback, resolve_host_executables=True) for c in commands
    ]
    segment = Evaluation.from_matches(tuple(m for found in per_command for m in found))
    scanned = scan_matches(policy, argv, literal_commands)
    deny = deny_side(policy, argv)
    # dict.fromkeys: one entry per match, in order (a normalised command often repeats one).
    scanned = tuple(dict.fromkeys(scanned + deny.matches))
    matches: tuple[RuleMatch, ...] = segment.matched_rules + scanned
    evaluation = Evaluation(strictest([m.decision for m in matches]), matches)

    def cmd_text() -> str:
        # Only reason texts show the command; quoting it costs more than the rest here.
        return join_for_display(argv)

    requested: tuple[str, ...] | None = None
    if auto:
        requested = derive_requested_execpolicy_amendment(prefix_rule, matches)
        if requested is not None:
            amended = policy.with_prefix_rule(requested, Decision.ALLOW)
            if not all(
                check_multiple(amended, [c], fallback, resolve_host_executables=True).decision
                is Decision.ALLOW
                for c in commands
            ):
                requested = None

    requirement: ExecApprovalRequirement
    if evaluation.decision is Decision.FORBIDDEN:
        best = _most_specific(matches, Decision.FORBIDDEN)
        if best is None:
            reason = f"`{cmd_text()}` rejected: blocked by policy"
        elif best.justification is not None:
            reason = f"`{cmd_text()}` rejected: {best.justification}"
        else:
            prefix = " ".join(best.matched_prefix)
            reason = f"`{cmd_text()}` rejected: policy forbids commands starting with `{prefix}`"
        requirement = Forbidden(reason)
    elif evaluation.decision is Decision.PROMPT:
        prompt_is_rule = any(
            isinstance(m, PrefixRuleMatch) and m.decision is Decision.PROMPT for m in matches
        )
        rejection = _prompt_rejection(ctx.approval_policy, prompt_is_rule)
        if rejection is not None:
            requirement = Forbidden(rejection)
        else:
            best = _most_specific(matches, Decision.PROMPT)
            prompt_reason: str | None = None
            if best is not None:
                prompt_reason = (
                    f"`{cmd_text()}` requires approval: {best.justification}"
                    if best.justification is not None
                    else f"`{cmd_text()}` requires approval by policy"
                )
            amendment = requested
            if amendment is None and auto and not prompt_is_rule:
                amendment = next(
                    (
                        m.command
                        for m in matches
                        if isinstance(m, HeuristicsRuleMatch) and m.decision is Decision.PROMPT
                    ),
                    None,
                )
            requirement = NeedsApproval(prompt_reason, amendment)
    else:
        bypass = all(
            any(isinstance(m, PrefixRuleMatch) and m.decision is Decision.ALLOW for m in found)
            for found in per_command
        )
        allow_amendment: tuple[str, ...] | None = None
        if auto and not any(isinstance(m, PrefixRuleMatch) for m in matches):
            allow_amendment = next(
                (
                    m.command
                    for m in matches
                    if isinstance(m, HeuristicsRuleMatch) and m.decision is Decision.ALLOW
                ),
                None,
            )
        requirement = Skip(bypass and not scanned, allow_amendment)
        asks = deny.named_rule is not None or (
            strict_unlowerable and deny.opaque and has_forbidden_rules(policy)
        )
        if asks:
            requirement = _opaque_requirement(ctx, cmd_text(), deny.named_rule)
    counts = tuple(len(found) for found in per_command)
    return ApprovalOutcome(requirement, segment.matched_rules, scanned, counts)


def _opaque_requirement(
    ctx: UnmatchedContext, command: str, named: PrefixRule | None
) -> ExecApprovalRequirement:
    """NeedsApproval for a script the rules cannot see through (Forbidden where none may ask)."""
    rejection = _prompt_rejection(ctx.approval_policy, prompt_is_rule=True)
    if rejection is not None:
        return Forbidden(rejection)
    if named is None:
        return NeedsApproval(f"`{command}` requires approval: the script cannot be checked "
                             "against the rules (strict_unlowerable)")  # fmt: skip
    program = " ".join([named.first, *(alternatives[0] for alternatives in named.rest)])
    return NeedsApproval(f"`{command}` requires approval: the script cannot be checked and "
                         f"names `{program}`, which a rule does not allow")  # fmt: skip


def create_exec_approval_requirement_for_argv(
    policy: Policy,
    argv: Sequence[str],
    ctx: UnmatchedContext,
    prefix_rule: Sequence[str] | None = None,
    *,
    strict_unlowerable: bool = False,
) -> ApprovalOutcome:
    """create_exec_approval_requirement with the projection and scan computed from argv."""
    literal = parse_shell_lc_literal_commands(argv) if extract_bash_command(argv) else None
    return create_exec_approval_requirement(
        policy, argv, commands_for_exec_policy(argv), literal, ctx, prefix_rule,
        strict_unlowerable=strict_unlowerable,
    )  # fmt: skip
