"""Projection A: the execution envelope of a handler command (spec 03 §A)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shellgate.common.egress.policy import EgressNarrowing
from shellgate.common.env_policy import (
    ShellEnvironmentPolicy,
    apply_unified_exec_env,
    create_env,
    inject_permission_profile_env,
)
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tools import UnifiedExecShellMode
from shellgate.router.handler.permissions import PermissionProfile
from shellgate.router.handler.shells import ShellType
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.output.unified_rules import (
    clamp_exec_yield_time_ms,
    unified_max_output_tokens,
)

__all__ = [
    "DEFAULT_SHELL_TIMEOUT_MS",
    "POWERSHELL_UTF8_PREFIX",
    "SANDBOX_NETWORK_DISABLED_ENV_VAR",
    "CommandSite",
    "EnvelopeTool",
    "Environment",
    "EnvironmentOf",
    "ExecutionEnvelope",
    "Permissions",
    "build_exec_command_envelope",
    "build_shell_command_envelope",
    "launch_argv",
    "launch_env",
    "policy_environment",
    "site_environment",
]

# Spec 05 §1.3: a classic command without `timeout_ms` is killed after 10 s.
DEFAULT_SHELL_TIMEOUT_MS = 10_000
POWERSHELL_UTF8_PREFIX = "[Console]::OutputEncoding=[System.Text.Encoding]::UTF8;\n"
SANDBOX_NETWORK_DISABLED_ENV_VAR = "CODEX_SANDBOX_NETWORK_DISABLED"


class EnvelopeTool(enum.StrEnum):
    """Which shell tool the envelope runs for."""

    SHELL_COMMAND = "shell_command"
    EXEC_COMMAND = "exec_command"


@dataclass(frozen=True, slots=True)
class Permissions:
    """`sandbox_permissions` plus the normalized additional-permissions profile."""

    sandbox_permissions: SandboxPermissions = SandboxPermissions.USE_DEFAULT
    # None when no profile applies.
    additional_permissions: PermissionProfile | None = None


@dataclass(frozen=True, slots=True)
class ExecutionEnvelope:
    """What is needed to run one handler command; read-only once built."""

    tool: EnvelopeTool
    argv: tuple[str, ...]
    shell_type: ShellType | None
    # The unified-exec shell mode for exec_command; None for shell_command.
    shell_mode: UnifiedExecShellMode | None
    environment_id: str
    remote: bool
    cwd: str
    sandbox_cwd: str
    # The runtime-built environment (policy, fixed values, permission profile), in order.
    env: tuple[tuple[str, str], ...]
    # The policy's `set` map, carried separately so later steps cannot silently drop it.
    explicit_env_overrides: tuple[tuple[str, str], ...]
    timeout_ms: int | None
    default_timeout: bool
    tty: bool | None
    yield_time_ms: int | None
    max_output_tokens: int | None
    output_policy: TruncationPolicy | None
    process_id: int | None
    requested_permissions: Permissions
    effective_permissions: Permissions
    # Whether the command's sandbox gives it the network: the turn's profile and its flag
    # (read-only never, workspace-write and external-sandbox as the flag says, full access
    # always). Never part of the approval key, which has no such field (spec 03 §C.2).
    network_access: bool
    preapproved: bool
    justification: str | None
    prefix_rule: tuple[str, ...] | None
    # How the turn narrows the environment's egress policy; not part of the approval key.
    egress: EgressNarrowing | None = None

    @property
    def env_map(self) -> dict[str, str]:
        """The environment as a dict."""
        return dict(self.env)


# The runtime-built environment, as (name, value) pairs in order.
Environment = tuple[tuple[str, str], ...]


def policy_environment(
    parent: tuple[tuple[str, str], ...],
    policy: ShellEnvironmentPolicy,
    thread_id: str | None,
    platform: str,
    unified: bool,
    active_profile: str | None,
) -> Environment:
    """The env policy applied to a parent environment (§A.2), then §A.3's fixed values."""
    env = create_env(dict(parent), policy, thread_id, platform)
    if unified:
        # After §A.2 and before the permission-profile injection (spec 03 §A.3).
        env = apply_unified_exec_env(env)
    return tuple(inject_permission_profile_env(env, active_profile, platform).items())


def site_environment(site: CommandSite, unified: bool) -> Environment:
    """The environment of a command site, computed afresh (`ProjectionMemo` keeps them)."""
    parent = site.parent_env
    items = parent if isinstance(parent, tuple) else tuple(parent.items())
    return policy_environment(
        items, site.env_policy, site.thread_id, site.platform, unified, site.active_profile
    )


@dataclass(frozen=True)
class CommandSite:
    """What both envelope builders share: the command, where it runs, its env and permissions."""

    argv: Sequence[str]
    shell_type: ShellType | None
    environment_id: str
    remote: bool
    cwd: str
    sandbox_cwd: str
    # The parent environment, or its items already as a tuple (a caller that reuses one
    # parent for many commands passes the same tuple each time).
    parent_env: Mapping[str, str] | tuple[tuple[str, str], ...]
    env_policy: ShellEnvironmentPolicy
    thread_id: str | None
    platform: str = "unix"
    active_profile: str | None = None
    requested: Permissions = Permissions()
    effective: Permissions | None = None
    network_access: bool = False
    preapproved: bool = False
    justification: str | None = None
    prefix_rule: Sequence[str] | None = None
    egress: EgressNarrowing | None = None


# How an envelope builder gets a site's environment: `site_environment`, or a memo's.
EnvironmentOf = Callable[[CommandSite, bool], Environment]


def _envelope(
    site: CommandSite,
    tool: EnvelopeTool,
    environment: EnvironmentOf,
    *,
    shell_mode: UnifiedExecShellMode | None,
    timeout_ms: int | None,
    default_timeout: bool,
    tty: bool | None,
    yield_time_ms: int | None,
    max_output_tokens: int | None,
    output_policy: TruncationPolicy | None,
    process_id: int | None,
) -> ExecutionEnvelope:
    unified = tool is EnvelopeTool.EXEC_COMMAND
    return ExecutionEnvelope(
        tool=tool,
        argv=tuple(site.argv),
        shell_type=site.shell_type,
        shell_mode=shell_mode,
        environment_id=site.environment_id,
        remote=site.remote,
        cwd=site.cwd,
        sandbox_cwd=site.sandbox_cwd,
        env=environment(site, unified),
        explicit_env_overrides=site.env_policy.set_pairs,
        timeout_ms=timeout_ms,
        default_timeout=default_timeout,
        tty=tty,
        yield_time_ms=yield_time_ms,
        max_output_tokens=max_output_tokens,
        output_policy=output_policy,
        process_id=process_id,
        requested_permissions=site.requested,
        effective_permissions=site.requested if site.effective is None else site.effective,
        network_access=site.network_access,
        preapproved=site.preapproved,
        justification=site.justification,
        prefix_rule=None if site.prefix_rule is None else tuple(site.prefix_rule),
        egress=site.egress,
    )


def build_shell_command_envelope(
    site: CommandSite,
    *,
    timeout_ms: int | None = None,
    environment: EnvironmentOf = site_environment,
) -> ExecutionEnvelope:
    """The envelope of a shell_command element: timeout, no tty, no fixed env values."""
    return _envelope(
        site,
        EnvelopeTool.SHELL_COMMAND,
        environment,
        shell_mode=None,
        timeout_ms=DEFAULT_SHELL_TIMEOUT_MS if timeout_ms is None else timeout_ms,
        default_timeout=timeout_ms is None,
        tty=None,
        yield_time_ms=None,
        max_output_tokens=None,
        output_policy=None,
        process_id=None,
    )


def build_exec_command_envelope(
    site: CommandSite,
    *,
    shell_mode: UnifiedExecShellMode,
    turn_policy: TruncationPolicy,
    windows_host: bool = False,
    tty: bool = False,
    yield_time_ms: int | None = None,
    max_output_tokens: int | None = None,
    process_id: int | None = None,
    environment: EnvironmentOf = site_environment,
) -> ExecutionEnvelope:
    """The envelope of an exec_command call: tty, clamped yield, output budget, no timeout."""
    return _envelope(
        site,
        EnvelopeTool.EXEC_COMMAND,
        environment,
        shell_mode=shell_mode,
        # Unified processes have no kill timeout (spec 05 §3.2).
        timeout_ms=None,
        default_timeout=False,
        tty=tty,
        yield_time_ms=clamp_exec_yield_time_ms(yield_time_ms, windows=windows_host),
        max_output_tokens=max_output_tokens,
        output_policy=unified_max_output_tokens(max_output_tokens, turn_policy),
        process_id=process_id,
    )


def launch_argv(argv: Sequence[str], shell_type: ShellType | None) -> list[str]:
    """The argv actually spawned: PowerShell scripts get the UTF-8 output prefix (§A.4)."""
    out = list(argv)
    if shell_type is ShellType.POWERSHELL and len(out) >= 2:
        script = out[-1]
        # The whole prefix, newline included, as Codex compares it after trimming the start.
        if not script.lstrip().startswith(POWERSHELL_UTF8_PREFIX):
            out[-1] = POWERSHELL_UTF8_PREFIX + script
    return out


def launch_env(
    env: Mapping[str, str], *, call_id: str, network_disabled: bool = False
) -> dict[str, str]:
    """The env actually spawned: the call id, and the network marker when blocked (§A.4)."""
    out = dict(env)
    out["CODEX_TOOL_CALL_ID"] = call_id
    if network_disabled:
        out[SANDBOX_NETWORK_DISABLED_ENV_VAR] = "1"
    return out
