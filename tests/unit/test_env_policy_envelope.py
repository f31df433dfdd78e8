"""Projection A envelope building (spec 03 §A.1, §A.3, §A.4)."""

from __future__ import annotations

import dataclasses

import pytest
from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tools import UnifiedExecShellMode
from shellgate.router.envelope import (
    POWERSHELL_UTF8_PREFIX,
    CommandSite,
    EnvelopeTool,
    Permissions,
    build_exec_command_envelope,
    build_shell_command_envelope,
    launch_argv,
    launch_env,
    site_environment,
)
from shellgate.router.handler.permissions import PermissionProfile
from shellgate.router.handler.shells import ShellType
from shellgate.router.output.truncation import TruncationPolicy

PARENT = {"PATH": "/bin", "HOME": "/h", "TERM": "xterm", "GITHUB_TOKEN": "t"}
POLICY = ShellEnvironmentPolicy.build(set_vars={"EXTRA": "1"})


def test_shell_command_envelope() -> None:
    env = build_shell_command_envelope(
        CommandSite(
            argv=["/bin/bash", "-lc", "ls"],
            shell_type=ShellType.BASH,
            environment_id="local",
            remote=False,
            cwd="/w/sub",
            sandbox_cwd="/w",
            parent_env=PARENT,
            env_policy=POLICY,
            thread_id="th",
            active_profile="dev",
        )
    )
    assert env.tool is EnvelopeTool.SHELL_COMMAND
    assert env.timeout_ms == 10_000 and env.default_timeout
    assert env.tty is None and env.yield_time_ms is None and env.output_policy is None
    assert env.env_map == {
        "PATH": "/bin",
        "HOME": "/h",
        "TERM": "xterm",
        "EXTRA": "1",
        "CODEX_THREAD_ID": "th",
        "CODEX_PERMISSION_PROFILE": "dev",
    }
    assert env.explicit_env_overrides == (("EXTRA", "1"),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.cwd = "/x"  # type: ignore[misc]


def test_exec_command_envelope_keeps_requested_and_effective() -> None:
    requested = Permissions()
    profile = PermissionProfile(network_enabled=True)
    effective = Permissions(SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS, profile)
    site = CommandSite(
        argv=["/bin/bash", "-lc", "ls"],
        shell_type=ShellType.BASH,
        environment_id="local",
        remote=False,
        cwd="/w",
        sandbox_cwd="/w",
        parent_env=PARENT,
        env_policy=POLICY,
        thread_id="th",
        requested=requested,
        effective=effective,
        preapproved=True,
    )
    env = build_exec_command_envelope(
        site,
        shell_mode=UnifiedExecShellMode.DIRECT,
        turn_policy=TruncationPolicy.tokens(10_000),
        tty=True,
        yield_time_ms=1,
        max_output_tokens=50,
        process_id=1000,
    )
    assert env.timeout_ms is None and not env.default_timeout
    assert env.yield_time_ms == 250 and env.tty is True
    assert env.output_policy == TruncationPolicy.tokens(50)
    assert env.env_map["TERM"] == "dumb" and env.env_map["CODEX_CI"] == "1"
    assert "GITHUB_TOKEN" not in env.env_map
    assert env.shell_type is ShellType.BASH and env.shell_mode is UnifiedExecShellMode.DIRECT
    assert env.requested_permissions == requested
    assert env.requested_permissions.sandbox_permissions is SandboxPermissions.USE_DEFAULT
    assert env.effective_permissions.additional_permissions == profile
    assert env.preapproved


def test_environment_is_injectable() -> None:
    """A builder takes the environment from the function it is given (a memo's, say)."""
    site = CommandSite(
        argv=["ls"], shell_type=None, environment_id="local", remote=False, cwd="/w",
        sandbox_cwd="/w", parent_env=PARENT, env_policy=POLICY, thread_id="th",
    )  # fmt: skip
    seen: list[bool] = []

    def environment(s: CommandSite, unified: bool) -> tuple[tuple[str, str], ...]:
        assert s is site
        seen.append(unified)
        return (("ONLY", "this"),)

    shell = build_shell_command_envelope(site, environment=environment)
    unified = build_exec_command_envelope(
        site, shell_mode=UnifiedExecShellMode.ZSH_FORK,
        turn_policy=TruncationPolicy.tokens(1), environment=environment,
    )  # fmt: skip
    assert shell.env == unified.env == (("ONLY", "this"),) and seen == [False, True]
    assert build_shell_command_envelope(site).env == site_environment(site, False)


def test_launch_rewrites() -> None:
    argv = ["pwsh", "-Command", "Get-Date"]
    out = launch_argv(argv, ShellType.POWERSHELL)
    assert out[-1] == POWERSHELL_UTF8_PREFIX + "Get-Date"
    assert launch_argv(out, ShellType.POWERSHELL) == out
    assert launch_argv(["/bin/bash", "-lc", "x"], ShellType.BASH) == ["/bin/bash", "-lc", "x"]
    assert launch_argv(argv, None) == argv
    env = launch_env({"CODEX_TOOL_CALL_ID": "parent"}, call_id="c1", network_disabled=True)
    assert env == {"CODEX_TOOL_CALL_ID": "c1", "CODEX_SANDBOX_NETWORK_DISABLED": "1"}
