"""The turn's `network_access`, from the TurnContext to the bubblewrap argv.

Codex 0.169.0 (`codex sandbox`, tests/integration/test_sandbox_network.py): workspace-write
has the network when `sandbox_workspace_write.network_access` says so (off when unset);
read-only never; danger-full-access always. The envelope (projection A) carries the result;
the approval key (projection C) has no such field (spec 03 §C.2, 06 §8), so it is the same
either way, while a requested network permission stays part of it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping

import pytest
from shellgate.common.sandbox import (
    NETWORK_DISABLED_ENV,
    SECCOMP_TRAMPOLINE,
    SandboxMode,
    SandboxSpec,
    wrap_argv,
)
from shellgate.common.seccomp import seccomp_filter, seccomp_filter_path
from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.policy import SandboxProfile, parse_policy
from shellgate.router.projection import CommandElement, ShellCall
from shellgate.router.runtime.call.orchestrator import choose_sandbox
from shellgate.router.runtime.environments.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2

KIND = {
    "read-only": common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY,
    "workspace-write": common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE,
    "danger-full-access": common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
    "external-sandbox": common_pb2.PERMISSION_PROFILE_KIND_EXTERNAL_SANDBOX,
    "unspecified (default workspace-write)": common_pb2.PERMISSION_PROFILE_KIND_UNSPECIFIED,
}


def _turn(kind: str, network: bool | None, **extra: object) -> RouterTurn:
    inputs = TurnInputs(
        defaults=TurnDefaults(),
        environments={"local": EnvironmentView("local", False, "/work", None)},
        host_shell=gather_host_shell_facts(None),
    )
    profile = common_pb2.PermissionProfile(kind=KIND[kind])
    if network is not None:
        profile.network_access = network
    ctx = common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id="local", cwd="/work")],
        permission_profile=profile,
        **extra,  # type: ignore[arg-type]
    )
    return router_turn("t", ctx, inputs)


def _element(turn: RouterTurn, tool: str, arguments: Mapping[str, object]) -> CommandElement:
    item = json.dumps({"type": "function_call", "name": tool, "call_id": "c",
                       "arguments": json.dumps(arguments)})  # fmt: skip
    outcome = project(item, turn, HostContext(policy=parse_policy(""))).outcome
    assert isinstance(outcome, ShellCall), outcome
    element = outcome.elements[0]
    assert isinstance(element, CommandElement)
    return element


@pytest.mark.parametrize(
    ("kind", "network", "expected"),
    [
        ("workspace-write", True, True),
        ("workspace-write", False, False),
        ("workspace-write", None, False),  # Codex's default: off
        ("read-only", True, False),  # the flag is workspace-write's; read-only stays off
        ("read-only", None, False),
        ("external-sandbox", True, True),
        ("external-sandbox", None, False),
        ("danger-full-access", False, True),
        ("unspecified (default workspace-write)", True, True),
    ],
)
def test_the_turn_and_its_envelopes_carry_the_effective_network(
    kind: str, network: bool | None, expected: bool
) -> None:
    turn = _turn(kind, network)
    assert turn.network_access is expected
    for tool, args in (("shell_command", {"command": "curl x"}), ("exec_command", {"cmd": "ls"})):
        assert _element(turn, tool, args).envelope.network_access is expected, tool


def test_the_sandbox_follows_the_envelope_and_read_only_never_has_the_network() -> None:
    on = _element(_turn("workspace-write", True), "exec_command", {"cmd": "ls"}).envelope
    off = _element(_turn("workspace-write", False), "exec_command", {"cmd": "ls"}).envelope
    ww = SandboxProfile.WORKSPACE_WRITE
    assert choose_sandbox(on, ww, bypass=False).network_access is True
    assert choose_sandbox(on, ww, bypass=False).mode is SandboxMode.WORKSPACE_WRITE
    assert choose_sandbox(off, ww, bypass=False).network_access is False
    # Even an envelope that claimed the network gets none under read-only.
    claimed = dataclasses.replace(on, network_access=True)
    read_only = choose_sandbox(claimed, SandboxProfile.READ_ONLY, bypass=False)
    assert read_only == SandboxSpec(SandboxMode.READ_ONLY, (), network_access=False)


def test_the_approval_key_has_no_turn_network_but_keeps_a_requested_one() -> None:
    for tool, args in (("shell_command", {"command": "curl x"}), ("exec_command", {"cmd": "ls"})):
        on = _element(_turn("workspace-write", True), tool, args)
        off = _element(_turn("workspace-write", False), tool, args)
        assert on.approval_key.digest() == off.approval_key.digest(), tool
        assert "network" not in json.dumps(on.approval_key.to_json()), tool
    # A per-command network request is part of the key, as the spec's vectors have it.
    asked = {"cmd": "ls", "sandbox_permissions": "with_additional_permissions",
             "additional_permissions": {"network": {"enabled": True}}}  # fmt: skip
    features = common_pb2.FeatureSwitches(exec_permission_approvals=True)
    turn = _turn("workspace-write", False, features=features)
    key = _element(turn, "exec_command", asked).approval_key.to_json()
    assert key["additional_permissions"] == {"network": {"enabled": True}}


@pytest.mark.parametrize("network", [True, False])
def test_the_bwrap_argv_follows_the_network(network: bool) -> None:
    spec = SandboxSpec(SandboxMode.WORKSPACE_WRITE, ("/work",), network)
    argv, extra = wrap_argv(("true",), "/work", spec, bwrap="/usr/bin/bwrap", unavailable_reason="")
    # The filter of this setting always applies, opened on fd 3 by the trampoline.
    path = seccomp_filter_path(network)
    assert argv[: len(SECCOMP_TRAMPOLINE) + 1] == (*SECCOMP_TRAMPOLINE, path)
    assert "--seccomp" in argv and argv[argv.index("--seccomp") + 1] == "3"
    with open(path, "rb") as f:
        assert f.read() == seccomp_filter(network)
    assert seccomp_filter_path(not network) != path
    # Network on: the host's network, no marker; off: an empty namespace and the marker.
    assert ("--unshare-net" in argv) is not network
    assert extra == ({} if network else {NETWORK_DISABLED_ENV: "1"})
    assert os.path.basename(argv[len(SECCOMP_TRAMPOLINE) + 1]) == "bwrap"
