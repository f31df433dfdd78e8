"""Issue 14 points 6-8: forbidden rules see through bypasses; Codex 0.169's banned amendments."""

from __future__ import annotations

import json

import pytest
from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.policy import (
    ApprovalMode,
    ApprovalPolicy,
    Forbidden,
    NeedsApproval,
    SandboxProfile,
    Skip,
    UnmatchedContext,
    create_exec_approval_requirement_for_argv,
    derive_requested_execpolicy_amendment,
    parse_policy,
)
from shellgate.router.projection import CommandElement, ShellCall
from shellgate.router.runtime.environments.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults, load_config
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2

from tests.integration.bypass_corpus import BYPASS_RULES, BYPASS_SCRIPTS

POLICY = parse_policy(BYPASS_RULES)
ON_REQUEST_WS = UnmatchedContext(
    ApprovalPolicy(ApprovalMode.ON_REQUEST), SandboxProfile.WORKSPACE_WRITE
)

# The twelve broad prefixes of issue 14 point 7: Codex 0.169 offers none of them.
BROAD_PREFIXES = (
    ("bash", "-c"), ("zsh", "-c"), ("/bin/sh",), ("/bin/sh", "-c"), ("/bin/bash", "-c"),
    ("dash", "-c"), ("ksh", "-c"), ("nodejs",), ("fish", "-c"), ("deno", "eval"), ("bun", "-e"),
    ("Rscript",),
)  # fmt: skip


def _turn() -> RouterTurn:
    inputs = TurnInputs(
        defaults=TurnDefaults(),
        environments={"local": EnvironmentView("local", False, "/work", None)},
        host_shell=gather_host_shell_facts(None),
    )
    ctx = common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id="local", cwd="/work")],
    )
    turn = router_turn("t", ctx, inputs)
    # The setting: on-request + workspace-write (the defaults).
    assert turn.approval_policy.mode is ApprovalMode.ON_REQUEST
    assert turn.permission_profile is SandboxProfile.WORKSPACE_WRITE
    return turn


def _projected(script: str, host: HostContext) -> object:
    item = json.dumps(
        {
            "type": "function_call",
            "name": "shell_command",
            "call_id": "c",
            "arguments": json.dumps({"command": script}),
        }
    )
    outcome = project(item, _turn(), host).outcome
    assert isinstance(outcome, ShellCall)
    element = outcome.elements[0]
    assert isinstance(element, CommandElement)
    return element.approval.requirement


@pytest.mark.parametrize("script", BYPASS_SCRIPTS)
def test_every_bypass_is_denied_or_asks_through_the_projection(script: str) -> None:
    requirement = _projected(script, HostContext(policy=POLICY))
    assert isinstance(requirement, Forbidden | NeedsApproval), requirement


@pytest.mark.parametrize(
    "script",
    ["ls -la", "echo rm -rf x", "git -C . status", "nice make", "command -v curl >/dev/null",
     "cargo test $X", "rm -i x", "find . -name '*.o' -print"],
)  # fmt: skip
def test_harmless_scripts_still_run(script: str) -> None:
    assert isinstance(_projected(script, HostContext(policy=POLICY)), Skip)


@pytest.mark.parametrize(
    "script",
    ['eval "$(echo Y2F0IC9ldGMvcGFzc3dkCg== | base64 -d)"', "cargo test $X", "echo $(date)"],
)
def test_strict_mode_makes_every_unlowerable_script_ask(script: str) -> None:
    assert isinstance(_projected(script, HostContext(policy=POLICY)), Skip)
    strict = HostContext(policy=POLICY, strict_unlowerable=True)
    assert isinstance(_projected(script, strict), NeedsApproval)
    # Strict mode has nothing to protect without a forbidden rule.
    relaxed = HostContext(policy=parse_policy('prefix_rule(pattern=["rm"], decision="prompt")'),
                          strict_unlowerable=True)  # fmt: skip
    assert isinstance(_projected(script, relaxed), Skip)


def test_strict_mode_is_a_router_config_key(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "router.toml"
    path.write_text("[policy]\nstrict_unlowerable = true\n", encoding="utf-8")
    assert load_config(str(path)).policy.strict_unlowerable
    assert not load_config(None).policy.strict_unlowerable


def test_a_never_policy_forbids_what_would_ask() -> None:
    ctx = UnmatchedContext(ApprovalPolicy(ApprovalMode.NEVER), SandboxProfile.WORKSPACE_WRITE)
    argv = ["bash", "-lc", "$(echo rm) -rf /tmp/x"]
    req = create_exec_approval_requirement_for_argv(POLICY, argv, ctx).requirement
    assert isinstance(req, Forbidden)


def test_allow_rules_are_not_broadened_by_normalisation() -> None:
    policy = parse_policy('prefix_rule(pattern=["git", "push"], decision="allow")')
    argv = ["bash", "-lc", "git -C . push"]
    req = create_exec_approval_requirement_for_argv(policy, argv, ON_REQUEST_WS).requirement
    # Codex sees `git -C . push`, which no rule allows: it runs sandboxed, as before.
    assert isinstance(req, Skip)
    assert not req.bypass_sandbox


@pytest.mark.parametrize("prefix", BROAD_PREFIXES)
def test_broad_prefixes_are_never_offered(prefix: tuple[str, ...]) -> None:
    assert derive_requested_execpolicy_amendment(prefix, []) is None
    argv = ["bash", "-lc", " ".join([*prefix, "'touch /outside'"])]
    req = create_exec_approval_requirement_for_argv(
        parse_policy(""), argv, UnmatchedContext(
            ApprovalPolicy(ApprovalMode.UNLESS_TRUSTED), SandboxProfile.WORKSPACE_WRITE
        ), prefix,
    ).requirement  # fmt: skip
    assert isinstance(req, NeedsApproval)
    assert req.proposed_execpolicy_amendment != prefix
