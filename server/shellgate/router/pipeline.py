"""The pure pipeline: model output item → `ProjectedCall` (decode, handler, projections).

`project(item, turn, host)` never spawns and never changes state; `Project` is exactly this
and `Execute` runs what it returns. Host facts (rules, the parent environment, shell lookups,
file reads for apply_patch verification) come in through `HostContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from shellgate.common.egress.policy import EgressNarrowing
from shellgate.common.env_policy import UNIFIED_EXEC_ENV, ShellEnvironmentPolicy
from shellgate.router.apply_patch import (
    ApplyPatchAction,
    CorrectnessError,
    PatchFileSystem,
    intercept_apply_patch,
)
from shellgate.router.apply_patch.verify import verify_patch_text
from shellgate.router.approval_identity import (
    ResolutionEnv,
    exec_command_approval_key,
    resolution_env_overrides,
    shell_command_approval_key,
)
from shellgate.router.decode.tool_call import (
    NoToolCall,
    ToolCall,
    ToolError,
    build_tool_call,
    parse_response_item,
)
from shellgate.router.decode.tools import (
    EnvironmentRef,
    ToolsConfig,
    UnifiedExecShellMode,
    register_shell_tools,
    shell_type_for_model_and_features,
)
from shellgate.router.display.parse_command import parse_command
from shellgate.router.envelope import (
    CommandSite,
    ExecutionEnvelope,
    Permissions,
    build_exec_command_envelope,
    build_shell_command_envelope,
)
from shellgate.router.handler.permissions import PermissionOutcome
from shellgate.router.handler.plan import (
    ApplyPatchCall,
    ExecCommandPlan,
    HandlerCommand,
    ShellCommandPlan,
    Turn,
    WriteStdinPlan,
    plan_tool_call,
)
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.output.unified_rules import (
    clamp_write_stdin_yield_time_ms,
    unified_max_output_tokens,
)
from shellgate.router.policy import (
    Policy,
    SandboxProfile,
    UnmatchedContext,
    create_exec_approval_requirement,
)
from shellgate.router.policy.approval_policy import ApprovalPolicy
from shellgate.router.policy_projection import commands_for_exec_policy, literal_commands_for_argv
from shellgate.router.projection import (
    ApplyPatchToolCall,
    CommandElement,
    NoToolCallOutcome,
    Outcome,
    PatchElement,
    ProjectedCall,
    ProjectionMemo,
    ShellCall,
    ShellElement,
    ToolErrorOutcome,
    WriteStdinCall,
)

DEFAULT_TRUNCATION = TruncationPolicy.tokens(10_000)
DEFAULT_ENV_POLICY = ShellEnvironmentPolicy()


@dataclass(frozen=True)
class RouterTurn:
    """A turn as the router sees it: the handler's turn plus policy and envelope inputs."""

    thread_id: str
    handler: Turn
    tools: ToolsConfig
    permission_profile: SandboxProfile = SandboxProfile.WORKSPACE_WRITE
    # Whether the turn's commands have the network: `permission_profile.network(flag)`.
    network_access: bool = False
    # How the turn narrows its environment's egress policy (PermissionProfile.egress).
    egress: EgressNarrowing | None = None
    active_profile_id: str | None = None
    env_policy: ShellEnvironmentPolicy = DEFAULT_ENV_POLICY
    truncation: TruncationPolicy = DEFAULT_TRUNCATION
    # The turn asked for the operator route (it can only escalate: docs/approvals.md).
    operator_route: bool = False
    # The caller answers its running commands' network approvals live (docs/approvals.md).
    live_network_approvals: bool = False

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """The turn's one approval policy (the handler's turn carries it)."""
        return self.handler.approval_policy

    @cached_property
    def registered_tools(self) -> frozenset[str]:
        """`registered_tools(self)`, computed once per turn (the router reuses its turns)."""
        return registered_tools(self)


@dataclass(frozen=True)
class HostContext:
    """Host facts the pure stages read: rules, parent env, files (for apply_patch)."""

    policy: Policy
    parent_env: Mapping[str, str] = field(default_factory=dict)
    # The filesystem of an environment, by id (apply_patch verification only reads).
    filesystem: Callable[[str], PatchFileSystem] | None = None
    session_exists: Callable[[int], bool] = lambda _id: False
    platform: str = "unix"
    # `[policy] strict_unlowerable`: every opaque script asks while a rule forbids.
    strict_unlowerable: bool = False
    # Environments (and the wire projection's messages) kept between projections; the
    # router application passes its own so every context of one router shares it.
    memo: ProjectionMemo = field(default_factory=ProjectionMemo, compare=False, repr=False)

    @cached_property
    def parent_env_items(self) -> tuple[tuple[str, str], ...]:
        """`parent_env` as a tuple, taken once per context (the router reuses its context)."""
        return tuple(self.parent_env.items())


def registered_tools(turn: RouterTurn) -> frozenset[str]:
    """The tool names the turn's registry dispatches (shell tools, then apply_patch)."""
    shell_type, _ = shell_type_for_model_and_features(
        turn.tools.model_shell_type, turn.tools.features, turn.tools.conpty_supported
    )
    registration = register_shell_tools(
        shell_type,
        [EnvironmentRef(env.id, env.remote) for env in turn.handler.environments],
        turn.handler.unified_exec_shell_mode,
    )
    names = set(registration.registered)
    if turn.tools.apply_patch_freeform:
        names.add("apply_patch")
    return frozenset(names)


def project(
    item: str | Mapping[str, Any] | ToolCall, turn: RouterTurn, host: HostContext
) -> ProjectedCall:
    """Decode and project one output item (raw JSON text, parsed object, or split call)."""
    call = item if isinstance(item, ToolCall) else _route(item)
    if not isinstance(call, ToolCall):
        return call
    plan = plan_tool_call(call, turn.handler, turn.registered_tools, host.session_exists)
    outcome, warnings = _outcome(plan, call, turn, host)
    return ProjectedCall(call.call_id, call.tool_name, call.kind, outcome, warnings)


def _route(item: str | Mapping[str, Any]) -> ToolCall | ProjectedCall:
    parsed = parse_response_item(item) if isinstance(item, str) else item
    if isinstance(parsed, NoToolCall):
        return ProjectedCall("", None, None, NoToolCallOutcome(parsed.reason))
    call = build_tool_call(parsed)
    if isinstance(call, NoToolCall):
        return ProjectedCall("", None, None, NoToolCallOutcome(call.reason))
    if isinstance(call, ToolError):
        call_id = parsed.get("call_id")
        call_id = call_id if isinstance(call_id, str) else ""
        return ProjectedCall(call_id, None, None, ToolErrorOutcome(call.text))
    return call


def _outcome(
    plan: object, call: ToolCall, turn: RouterTurn, host: HostContext
) -> tuple[Outcome, tuple[str, ...]]:
    if isinstance(plan, ToolError):
        return ToolErrorOutcome(plan.text), ()
    if isinstance(plan, ShellCommandPlan):
        elements = tuple(
            _element(cmd, plan.permissions, turn, host, timeout_ms=plan.params.timeout_ms,
                     justification=plan.params.justification, prefix_rule=plan.params.prefix_rule)
            for cmd in plan.commands
        )  # fmt: skip
        batch = not isinstance(plan.params.command, str)
        return ShellCall("shell_command", elements, batch, plan.permissions), plan.warnings
    if isinstance(plan, ExecCommandPlan):
        p = plan.params
        element = _element(
            plan.command, plan.permissions, turn, host, tty=p.tty,
            yield_time_ms=p.yield_time_ms, max_output_tokens=p.max_output_tokens,
            justification=p.justification, prefix_rule=p.prefix_rule,
        )  # fmt: skip
        return ShellCall("exec_command", (element,), False, plan.permissions), plan.warnings
    if isinstance(plan, WriteStdinPlan):
        p2 = plan.params
        return (
            WriteStdinCall(
                p2,
                clamp_write_stdin_yield_time_ms(p2.chars, p2.yield_time_ms),
                unified_max_output_tokens(p2.max_output_tokens, turn.truncation),
            ),
            plan.warnings,
        )
    if isinstance(plan, ApplyPatchCall):
        env = turn.handler.environments[0] if turn.handler.environments else None
        if env is None or host.filesystem is None:
            return ToolErrorOutcome("apply_patch is unavailable in this session"), ()
        result = verify_patch_text(plan.input, env.cwd, host.filesystem(env.id))
        if not isinstance(result, ApplyPatchAction | CorrectnessError):
            result = CorrectnessError(f"apply_patch verification failed: {plan.input!r}")
        return ApplyPatchToolCall(plan.input, env.id, env.cwd, result), ()
    raise TypeError(f"unexpected plan {type(plan).__name__}")  # pragma: no cover


def _element(
    cmd: HandlerCommand,
    permissions: PermissionOutcome,
    turn: RouterTurn,
    host: HostContext,
    *,
    timeout_ms: int | None = None,
    tty: bool = False,
    yield_time_ms: int | None = None,
    max_output_tokens: int | None = None,
    justification: str | None,
    prefix_rule: tuple[str, ...] | None,
) -> ShellElement:
    envelope = _envelope(cmd, permissions, turn, host, timeout_ms, tty, yield_time_ms,
                         max_output_tokens, justification, prefix_rule)  # fmt: skip
    if host.filesystem is not None:
        intercepted = intercept_apply_patch(cmd.argv, cmd.cwd, host.filesystem(cmd.environment_id))
        if isinstance(intercepted, ApplyPatchAction | CorrectnessError):
            return PatchElement(cmd, envelope, intercepted)
    policy_projection = commands_for_exec_policy(cmd.argv)
    literal = literal_commands_for_argv(cmd.argv)
    if cmd.tool == "exec_command":
        key = exec_command_approval_key(
            environment_id=cmd.environment_id, argv=cmd.argv, cwd_uri=cmd.cwd, tty=tty,
            sandbox_permissions=permissions.effective_sandbox,
            additional_permissions=permissions.effective_profile,
        )  # fmt: skip
    else:
        key = shell_command_approval_key(
            environment_id=cmd.environment_id, argv=cmd.argv, cwd=cmd.cwd,
            sandbox_permissions=permissions.effective_sandbox,
            additional_permissions=permissions.effective_profile,
        )  # fmt: skip
    ctx = UnmatchedContext(
        approval_policy=turn.approval_policy,
        permission_profile=turn.permission_profile,
        sandbox_permissions=permissions.policy_sandbox,
        used_complex_parsing=policy_projection.used_complex_parsing,
        command_origin=policy_projection.command_origin,
    )
    approval = create_exec_approval_requirement(
        host.policy,
        cmd.argv,
        policy_projection,
        None if literal is None else [c.words for c in literal],
        ctx,
        prefix_rule,
        strict_unlowerable=host.strict_unlowerable,
    )
    return CommandElement(
        handler=cmd,
        envelope=envelope,
        policy=policy_projection,
        literal_commands=literal,
        approval_key=key,
        display=tuple(parse_command(cmd.argv)),
        approval=approval,
        prefix_rule=prefix_rule,
        resolution_env=_resolution_env(cmd, envelope, host),
    )


def _resolution_env(
    cmd: HandlerCommand, envelope: ExecutionEnvelope, host: HostContext
) -> ResolutionEnv:
    """The envelope's resolution variables that differ from what the router gives by itself.

    The baseline is the parent environment (none for a daemon's, as in the envelope) with
    the fixed unified-exec values for exec_command, so only the turn's policy counts.
    """
    baseline: tuple[tuple[str, str], ...] = () if cmd.remote else host.parent_env_items
    if cmd.tool == "exec_command":
        baseline = (*baseline, *UNIFIED_EXEC_ENV)
    return resolution_env_overrides(envelope.env, baseline)


def _remote_egress(turn: EgressNarrowing | None, host: HostContext) -> EgressNarrowing | None:
    """A daemon's narrowing: the turn's, plus the hosts the rules' `network_rule`s deny
    (a daemon decides with its own `[network]`; the router's denies hold there too)."""
    _allowed, denied = host.policy.compiled_network_domains()
    if not denied:
        return turn
    base = turn or EgressNarrowing()
    return replace(base, denied_domains=(*base.denied_domains, *denied))


def _envelope(
    cmd: HandlerCommand,
    permissions: PermissionOutcome,
    turn: RouterTurn,
    host: HostContext,
    timeout_ms: int | None,
    tty: bool,
    yield_time_ms: int | None,
    max_output_tokens: int | None,
    justification: str | None,
    prefix_rule: tuple[str, ...] | None,
) -> ExecutionEnvelope:
    requested = Permissions(permissions.requested_sandbox, permissions.requested_profile)
    effective = Permissions(permissions.effective_sandbox, permissions.effective_profile)
    # A remote daemon applies the env policy to its own environment; the projection shows
    # what the policy alone yields there (no inherited variables are known here).
    parent_env = () if cmd.remote else host.parent_env_items
    site = CommandSite(
        argv=cmd.argv, shell_type=cmd.shell_type, environment_id=cmd.environment_id,
        remote=cmd.remote, cwd=cmd.cwd, sandbox_cwd=cmd.sandbox_cwd, parent_env=parent_env,
        env_policy=turn.env_policy, thread_id=turn.thread_id, platform=host.platform,
        active_profile=turn.active_profile_id, requested=requested, effective=effective,
        network_access=turn.network_access,
        egress=_remote_egress(turn.egress, host) if cmd.remote else turn.egress,
        preapproved=permissions.preapproved,
        justification=justification, prefix_rule=prefix_rule,
    )  # fmt: skip
    if cmd.tool == "exec_command":
        return build_exec_command_envelope(
            site, shell_mode=UnifiedExecShellMode.DIRECT if cmd.mode is None else cmd.mode,
            turn_policy=turn.truncation, tty=tty, yield_time_ms=yield_time_ms,
            max_output_tokens=max_output_tokens, environment=host.memo.environment,
        )  # fmt: skip
    return build_shell_command_envelope(
        site, timeout_ms=timeout_ms, environment=host.memo.environment
    )
