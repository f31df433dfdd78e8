"""Approval requirement, deny-side scan, unwrapping and heuristics (spec 04 §2.1, §3, §5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.bash.shlex_rs import shlex_join_strict as shlex_join
from shellgate.router.bash.shlex_rs import shlex_split
from shellgate.router.policy import (
    ApprovalMode,
    ApprovalPolicy,
    Decision,
    Forbidden,
    NeedsApproval,
    Policy,
    SandboxProfile,
    Skip,
    UnmatchedContext,
    check_multiple,
    command_might_be_dangerous,
    create_exec_approval_requirement,
    create_exec_approval_requirement_for_argv,
    parse_policy,
    unwrapped_commands,
)
from shellgate.router.policy_projection import (
    commands_for_exec_policy,
    parse_shell_lc_literal_commands,
)

ON_REQUEST_WS = UnmatchedContext(
    ApprovalPolicy(ApprovalMode.ON_REQUEST), SandboxProfile.WORKSPACE_WRITE
)


def _req(rules: str, argv: list[str], ctx: UnmatchedContext = ON_REQUEST_WS) -> object:
    policy = parse_policy(rules) if rules else Policy()
    return create_exec_approval_requirement_for_argv(policy, argv, ctx).requirement


FORBID_RM = 'prefix_rule(pattern=["rm"], decision="forbidden")'


@pytest.mark.parametrize(
    "argv",
    [
        ["bash", "-lc", "rm -rf ~/project"],
        ["bash", "-lc", "for f in *; do rm -f $f; done"],
        ["bash", "-lc", "sudo rm -rf /x"],
        ["bash", "-lc", "bash -c 'rm -rf x'"],
        ["env", "FOO=1", "rm", "-rf", "/tmp/x"],
        ["bash", "-lc", "find . -print0 | xargs -0 rm -f"],
    ],
)
def test_scan_forbids_through_scripts_and_prefixes(argv: list[str]) -> None:
    req = _req(FORBID_RM, argv)
    assert isinstance(req, Forbidden)
    assert req.reason.endswith("rejected: policy forbids commands starting with `rm`")
    assert req.reason.startswith(f"`{shlex_join(argv)}`")


def test_allow_rule_is_never_granted_through_the_scan_or_unwrap() -> None:
    allow_rm = 'prefix_rule(pattern=["rm"], decision="allow")'
    assert _req(allow_rm, ["bash", "-lc", "rm -rf ~/project"]) == NeedsApproval(
        None, ("bash", "-lc", "rm -rf ~/project")
    )
    assert _req(allow_rm, ["sudo", "rm", "-rf", "x"]) == NeedsApproval(
        None, ("sudo", "rm", "-rf", "x")
    )


def test_rule_on_the_prefix_itself_still_applies_and_strictest_wins() -> None:
    rules = 'prefix_rule(pattern=["sudo"], decision="allow")\n' + FORBID_RM
    req = _req(rules, ["sudo", "rm", "-rf", "/tmp/x"])
    assert req == Forbidden(
        "`sudo rm -rf /tmp/x` rejected: policy forbids commands starting with `rm`"
    )


def test_scan_prompt_prevents_skip_and_bypass() -> None:
    rules = 'prefix_rule(pattern=["bash", "-lc"], decision="allow")\nprefix_rule(pattern=["rm"], decision="prompt")'
    req = _req(rules, ["bash", "-lc", "rm -r ~/cache"])
    assert req == NeedsApproval("`bash -lc 'rm -r ~/cache'` requires approval by policy", None)


def test_command_v_runs_nothing() -> None:
    rules = 'prefix_rule(pattern=["curl"], decision="forbidden")'
    req = _req(rules, ["bash", "-lc", "command -v curl >/dev/null || echo missing"])
    assert isinstance(req, Skip)


def test_outcome_reports_segment_and_scan_matches_separately() -> None:
    policy = parse_policy('prefix_rule(pattern=["git", "push"], decision="prompt")')
    argv = ["bash", "-lc", 'cd x && git push origin "$BRANCH"']
    outcome = create_exec_approval_requirement(
        policy,
        argv,
        commands_for_exec_policy(argv),
        parse_shell_lc_literal_commands(argv),
        ON_REQUEST_WS,
    )
    assert [m.decision for m in outcome.segment_matches] == [Decision.ALLOW]  # heuristics
    assert [m.matched_prefix for m in outcome.scan_matches] == [("git", "push")]


def test_forbidden_tie_break_prefers_the_later_match() -> None:
    rules = (
        'prefix_rule(pattern=["rm"], decision="forbidden", justification="first")\n'
        'prefix_rule(pattern=["curl"], decision="forbidden", justification="second")'
    )
    req = _req(rules, ["bash", "-lc", "rm -rf ~/a; curl ~/b"])
    assert req == Forbidden("`bash -lc 'rm -rf ~/a; curl ~/b'` rejected: second")


def test_never_and_granular_rejections() -> None:
    never = UnmatchedContext(ApprovalPolicy(ApprovalMode.NEVER), SandboxProfile.EXTERNAL)
    assert _req('prefix_rule(pattern=["rm"], decision="prompt")', ["rm", "x"], never) == Forbidden(
        "approval required by policy, but AskForApproval is set to Never"
    )
    assert _req("", ["rm", "-rf", "/tmp/x"], never) == Forbidden(
        "`rm -rf /tmp/x` rejected: blocked by policy"
    )


def test_heredoc_fallback_never_proposes_amendments() -> None:
    ctx = UnmatchedContext(ApprovalPolicy(ApprovalMode.UNLESS_TRUSTED), SandboxProfile.READ_ONLY)
    argv = ["bash", "-lc", "python3 <<'PY'\nprint('hello')\nPY"]
    policy = Policy()
    outcome = create_exec_approval_requirement_for_argv(policy, argv, ctx, ["python3"])
    assert outcome.requirement == NeedsApproval(None, None)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["sudo", "-u", "root", "rm", "-rf", "x"], [["rm", "-rf", "x"]]),
        (["env", "-i", "PATH=/usr/bin", "LANG=C", "rm", "-rf", "x"], [["rm", "-rf", "x"]]),
        (["timeout", "-k", "5", "30s", "rm", "-rf", "x"], [["rm", "-rf", "x"]]),
        (["command", "-v", "rm"], []),
        (["ls", "-la"], []),
        (
            ["bash", "-lc", "sudo rm -rf x; ls"],
            [["sudo", "rm", "-rf", "x"], ["rm", "-rf", "x"], ["ls"]],
        ),
        (["sudo", "bash", "-lc", "rm -rf x"], [["bash", "-lc", "rm -rf x"], ["rm", "-rf", "x"]]),
        (
            ["bash", "-lc", "find . -print0 | xargs -0 rm -f"],
            [["find", ".", "-print0"], ["xargs", "-0", "rm", "-f"], ["rm", "-f"]],
        ),
    ],
)
def test_unwrapped_commands_table(argv: list[str], expected: list[list[str]]) -> None:
    assert [list(c) for c in unwrapped_commands(argv)] == expected


def test_depth_bound_is_exactly_four() -> None:
    four = ["sudo", "-u", "root", "env", "-i", "time", "-p", "nice", "-n", "5", "rm", "-rf", "x"]
    assert command_might_be_dangerous(four)
    five = [*four[:-3], "nohup", "rm", "-rf", "x"]
    assert not command_might_be_dangerous(five)
    assert not command_might_be_dangerous(["bash", "-lc", "sudo env time nice rm -rf x"])
    assert command_might_be_dangerous(["sudo"] * 50 + ["rm", "-rf", "x"])  # Codex's own recursion


def test_long_prefix_chains_stay_bounded() -> None:
    argv = ["env"] * 10_000 + ["rm", "-rf", "x"]
    assert len(unwrapped_commands(argv)) == 4
    assert not command_might_be_dangerous(argv)


_word = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_word, max_size=6))
def test_shlex_join_round_trips(words: list[str]) -> None:
    assert shlex_split(shlex_join(words)) == words


_tokens = st.sampled_from(
    ["rm", "-rf", "-f", "x", "sudo", "env", "A=1", "--", "timeout", "5", "git"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_tokens, min_size=1, max_size=8), st.sampled_from(["allow", "prompt", "forbidden"]))
def test_scan_only_ever_makes_decisions_stricter(argv: list[str], decision: str) -> None:
    policy = parse_policy(f'prefix_rule(pattern=["rm"], decision="{decision}")')
    projection = commands_for_exec_policy(argv)
    outcome = create_exec_approval_requirement(policy, argv, projection, None, ON_REQUEST_WS)
    segment = check_multiple(
        policy, projection.commands, lambda _c: Decision.ALLOW, resolve_host_executables=True
    )
    assert all(m.decision is not Decision.ALLOW for m in outcome.scan_matches)
    if outcome.scan_matches:
        assert not isinstance(outcome.requirement, Skip)
    if isinstance(outcome.requirement, Skip) and outcome.requirement.bypass_sandbox:
        assert segment.decision is Decision.ALLOW and not outcome.scan_matches
