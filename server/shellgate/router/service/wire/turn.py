"""Protobuf `TurnContext` → the router's `RouterTurn`, with the configured defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shellgate.common.egress.wire import narrowing_from_pb
from shellgate.common.enum_maps import INHERIT
from shellgate.common.env_policy import Inherit, ShellEnvironmentPolicy
from shellgate.common.errors import (
    EnvironmentNotAllowedError,
    EnvironmentNotFoundError,
    InvalidArgumentError,
)
from shellgate.router.decode.params import FileSystemAccess
from shellgate.router.decode.tools import ConfigShellToolType, EnvironmentRef, Features, ToolsConfig
from shellgate.router.handler.environments import ReportedShell, TurnEnvironment
from shellgate.router.handler.permissions import Grants, PermissionProfile
from shellgate.router.handler.plan import Turn
from shellgate.router.handler.shells import HostShellFacts
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.pipeline import RouterTurn
from shellgate.router.policy import SandboxProfile
from shellgate.router.policy.approval_policy import ApprovalMode, ApprovalPolicy, GranularApproval
from shellgate.router.service.config import TurnDefaults
from shellgate.v1 import common_pb2

MAX_ENV_POLICY_ITEMS = 1_024
MAX_CWD_CHARS = 4_096

# Wire enum → domain enum, one table each; an unset (or unknown) number is absent, and the
# configured default applies.
_APPROVAL_MODES_PB = {
    common_pb2.APPROVAL_POLICY_KIND_NEVER: ApprovalMode.NEVER,
    common_pb2.APPROVAL_POLICY_KIND_ON_FAILURE: ApprovalMode.ON_FAILURE,
    common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST: ApprovalMode.ON_REQUEST,
    common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED: ApprovalMode.UNLESS_TRUSTED,
    common_pb2.APPROVAL_POLICY_KIND_GRANULAR: ApprovalMode.GRANULAR,
}
_POLICY_PROFILES_PB = {
    common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY: SandboxProfile.READ_ONLY,
    common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE: SandboxProfile.WORKSPACE_WRITE,
    common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS: SandboxProfile.DISABLED,
    common_pb2.PERMISSION_PROFILE_KIND_EXTERNAL_SANDBOX: SandboxProfile.EXTERNAL,
}
_SHELL_TOOLS_PB = {
    common_pb2.MODEL_SHELL_TOOL_TYPE_DEFAULT: ConfigShellToolType.DEFAULT,
    common_pb2.MODEL_SHELL_TOOL_TYPE_LOCAL: ConfigShellToolType.LOCAL,
    common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC: ConfigShellToolType.UNIFIED_EXEC,
    common_pb2.MODEL_SHELL_TOOL_TYPE_DISABLED: ConfigShellToolType.DISABLED,
    common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND: ConfigShellToolType.SHELL_COMMAND,
}
# Not `INHERIT.domain`: unset inherit means "the configured default", not the daemon's
# default (all).
_INHERIT_PB: dict[int, Inherit] = {wire: inherit for inherit, wire in INHERIT.to_wire.items()}
_ACCESS_PB = {
    common_pb2.FILE_SYSTEM_ACCESS_READ: FileSystemAccess.READ,
    common_pb2.FILE_SYSTEM_ACCESS_WRITE: FileSystemAccess.WRITE,
    common_pb2.FILE_SYSTEM_ACCESS_NONE: FileSystemAccess.NONE,
}
# The configured defaults are names (config files); these read them.
_APPROVAL_MODES = {
    "never": ApprovalMode.NEVER,
    "on-failure": ApprovalMode.ON_FAILURE,
    "on-request": ApprovalMode.ON_REQUEST,
    "untrusted": ApprovalMode.UNLESS_TRUSTED,
    "granular": ApprovalMode.GRANULAR,
}
_POLICY_PROFILES = {
    "read-only": SandboxProfile.READ_ONLY,
    "workspace-write": SandboxProfile.WORKSPACE_WRITE,
    "danger-full-access": SandboxProfile.DISABLED,
    "external-sandbox": SandboxProfile.EXTERNAL,
}


@dataclass(frozen=True)
class EnvironmentView:
    """What the router knows of one configured environment when a request arrives."""

    environment_id: str
    remote: bool
    cwd: str
    shell: ReportedShell | None
    allow_login_shell: bool = True


@dataclass(frozen=True)
class TurnInputs:
    """Server-side facts a turn conversion needs."""

    defaults: TurnDefaults
    environments: Mapping[str, EnvironmentView]
    host_shell: HostShellFacts
    allowed_environments: frozenset[str] | None = None
    # `[limits] max_environments_per_turn`: a longer `turn.environments` is refused.
    max_environments: int = 16


def approval_policy(name: str, granular: GranularApproval | None) -> ApprovalPolicy:
    """The approval policy of a configured name (`granular` switches only for `granular`)."""
    mode = _APPROVAL_MODES.get(name)
    if mode is None:
        raise InvalidArgumentError(f"turn.approval_policy: unknown policy {name!r}")
    return ApprovalPolicy(mode, granular)


def _env_policy(turn: common_pb2.TurnContext, d: TurnDefaults) -> ShellEnvironmentPolicy:
    if not turn.HasField("shell_environment_policy"):
        return ShellEnvironmentPolicy.build(
            inherit=d.env_inherit, ignore_default_excludes=d.env_ignore_default_excludes,
            exclude=d.env_exclude, set_vars=dict(d.env_set), include_only=d.env_include_only,
        )  # fmt: skip
    p = turn.shell_environment_policy
    if len(p.exclude) + len(p.set) + len(p.include_only) > MAX_ENV_POLICY_ITEMS:
        raise InvalidArgumentError("turn.shell_environment_policy: too many entries")
    return ShellEnvironmentPolicy.build(
        inherit=_INHERIT_PB.get(p.inherit, d.env_inherit),
        ignore_default_excludes=(
            p.ignore_default_excludes
            if p.HasField("ignore_default_excludes")
            else d.env_ignore_default_excludes
        ),
        exclude=list(p.exclude),
        set_vars=dict(sorted(p.set.items())),
        include_only=list(p.include_only),
    )


def _features(f: common_pb2.FeatureSwitches) -> Features:
    base = Features()
    values = {
        name: getattr(f, name) if f.HasField(name) else getattr(base, name)
        for name in Features.__dataclass_fields__
    }
    return Features(**values)


def _profile(p: common_pb2.AdditionalPermissions) -> PermissionProfile:
    network = (
        p.network.enabled if p.HasField("network") and p.network.HasField("enabled") else False
    )
    entries = frozenset(
        (e.path, _ACCESS_PB.get(e.access, FileSystemAccess.READ)) for e in p.file_system.entries
    )
    depth = (
        p.file_system.glob_scan_max_depth if p.file_system.HasField("glob_scan_max_depth") else None
    )
    return PermissionProfile(network_enabled=network, entries=entries, glob_scan_max_depth=depth)


def _grants(turn: common_pb2.TurnContext) -> Grants:
    session: PermissionProfile | None = None
    per_env: dict[str, PermissionProfile] = {}
    for grant in turn.granted_permissions:
        profile = _profile(grant.permissions)
        if grant.scope == common_pb2.GRANT_SCOPE_SESSION:
            session = profile
        else:
            per_env[grant.environment_id] = profile
    return Grants(session=session, turn=per_env)


def _environments(
    turn: common_pb2.TurnContext, inputs: TurnInputs, allow_login: bool
) -> tuple[TurnEnvironment, ...]:
    chosen: Sequence[tuple[str, str]] = [(e.environment_id, e.cwd) for e in turn.environments]
    if not chosen:
        first = next(iter(inputs.environments.values()), None)
        chosen = [] if first is None else [(first.environment_id, "")]
    if len(chosen) > inputs.max_environments:
        raise InvalidArgumentError(
            f"turn.environments: at most {inputs.max_environments} environments per turn "
            "(limits.max_environments_per_turn)",
            limit="limits.max_environments_per_turn",
        )
    out: list[TurnEnvironment] = []
    for env_id, cwd in chosen:
        view = inputs.environments.get(env_id)
        if view is None:
            raise EnvironmentNotFoundError(f"turn.environments: unknown environment {env_id!r}")
        if inputs.allowed_environments is not None and env_id not in inputs.allowed_environments:
            raise EnvironmentNotAllowedError(f"environment {env_id!r} is not allowed for this client")
        if len(cwd) > MAX_CWD_CHARS or "\0" in cwd:
            raise InvalidArgumentError("turn.environments.cwd: too long or contains NUL")
        if cwd and not cwd.startswith("/"):
            raise InvalidArgumentError("turn.environments.cwd: must be an absolute path")
        out.append(
            TurnEnvironment(
                id=env_id,
                cwd=cwd or view.cwd,
                remote=view.remote,
                shell=view.shell,
                allow_login_shell=allow_login and view.allow_login_shell,
            )
        )
    return tuple(out)


def router_turn(thread_id: str, turn: common_pb2.TurnContext, inputs: TurnInputs) -> RouterTurn:
    """Convert a wire turn, applying the configured defaults to every unset field."""
    d = inputs.defaults
    granular = None
    if turn.approval_policy.HasField("granular"):
        g = turn.approval_policy.granular
        granular = GranularApproval(
            g.sandbox_approval, g.rules, g.skill_approval, g.request_permissions,
            g.mcp_elicitations,
        )  # fmt: skip
    mode = _APPROVAL_MODES_PB.get(turn.approval_policy.kind)
    policy = (
        approval_policy(d.approval_policy, granular)
        if mode is None
        else ApprovalPolicy(mode, granular)
    )
    profile = _POLICY_PROFILES_PB.get(turn.permission_profile.kind)
    if profile is None:
        profile = _POLICY_PROFILES.get(d.permission_profile)
        if profile is None:
            raise InvalidArgumentError(
                f"turn.permission_profile: unknown profile {d.permission_profile!r}"
            )
    allow_login = (
        turn.allow_login_shell if turn.HasField("allow_login_shell") else d.allow_login_shell
    )
    environments = _environments(turn, inputs, allow_login)
    features = _features(turn.features)
    truncation = TruncationPolicy.tokens(d.truncation_tokens)
    if turn.truncation_policy.WhichOneof("limit") == "tokens":
        truncation = TruncationPolicy.tokens(turn.truncation_policy.tokens)
    elif turn.truncation_policy.WhichOneof("limit") == "bytes":
        truncation = TruncationPolicy.bytes(turn.truncation_policy.bytes)
    shell_tool = _SHELL_TOOLS_PB.get(turn.shell_tool_type)
    tools = ToolsConfig(
        model_shell_type=(
            ConfigShellToolType(d.shell_tool_type) if shell_tool is None else shell_tool
        ),
        features=features,
        environments=tuple(EnvironmentRef(e.id, e.remote) for e in environments),
        allow_login_shell=allow_login,
        apply_patch_freeform=turn.apply_patch_tool != common_pb2.APPLY_PATCH_TOOL_TYPE_DISABLED,
        advertise_command_batches=turn.advertise_command_batches,
    )
    active = (
        turn.permission_profile.active_profile_id
        if turn.permission_profile.HasField("active_profile_id")
        else None
    )
    handler = Turn(
        environments=environments,
        approval_policy=policy,
        features=features,
        host=inputs.host_shell,
        grants=_grants(turn),
    )
    return RouterTurn(
        thread_id=thread_id,
        handler=handler,
        tools=tools,
        permission_profile=profile,
        # Unset reads false: off, as Codex's `sandbox_workspace_write.network_access`.
        network_access=profile.network(turn.permission_profile.network_access),
        egress=(
            narrowing_from_pb(turn.permission_profile.egress)
            if turn.permission_profile.HasField("egress")
            else None
        ),
        active_profile_id=active,
        env_policy=_env_policy(turn, d),
        truncation=truncation,
        operator_route=turn.approval_route == common_pb2.APPROVAL_ROUTE_OPERATOR,
        live_network_approvals=turn.live_network_approvals,
    )
