"""Handler stage: tool call + turn → handler commands, or the model-facing error (spec 02).

Domain API (pure; host facts such as the passwd shell and PATH lookups come in as data):

* `plan_tool_call(call, turn, registered, session_exists)` dispatches a routed `ToolCall`:
  the dispatch error text (`unsupported call: …`, `aborted`), or one of
  - `ShellCommandPlan` — one `HandlerCommand` per element (one for a string `command`,
    several for a batch, decision 3a), shared permissions, timeout and warnings;
  - `ExecCommandPlan` — one `HandlerCommand` plus permissions and warnings;
  - `WriteStdinPlan` — the decoded `write_stdin` record for a live session;
  - `ApplyPatchCall` — the freeform `apply_patch` custom tool input;
  - `ToolError` — the exact text the model receives.
* `plan_shell_command`, `plan_exec_command`, `plan_write_stdin` are the per-tool steps.

apply_patch interception is not done here: the pipeline calls it on each
`HandlerCommand.argv` (spec 02 §6), before any projection.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Final

from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tool_call import (
    Arguments,
    Decoded,
    ExecCommandParams,
    PayloadKind,
    ShellCommandParams,
    ToolCall,
    ToolError,
    WriteStdinParams,
    decode_exec_command,
    decode_exec_environment_id,
    decode_exec_workdir,
    decode_session_id,
    decode_shell_command,
    decode_write_stdin,
    dispatch_error,
    exec_post_decode_check,
    shell_command_workdir,
)
from shellgate.router.decode.tools import Features, UnifiedExecShellMode
from shellgate.router.decode.workdir import resolve_workdir
from shellgate.router.handler.environments import (
    TurnEnvironment,
    base_shell,
    remote_command,
    select_environment,
    shell_mode_for_environment,
    zsh_fork_command,
)
from shellgate.router.handler.permissions import (
    Grants,
    PermissionOutcome,
    PermissionRequest,
    resolve_permissions,
)
from shellgate.router.handler.shells import (
    HostShellFacts,
    Shell,
    ShellType,
    derive_exec_args,
    shell_by_model_provided_path,
)
from shellgate.router.policy.approval_policy import ApprovalPolicy

LOGIN_DISABLED: Final = "login shell is disabled by config; omit `login` or set it to false."
DEFAULT_SHELL_TIMEOUT_MS: Final = 10_000


@dataclass(frozen=True)
class HandlerCommand:
    """The common exit of decode: a full shell invocation and where it runs."""

    argv: tuple[str, ...]
    shell_type: ShellType
    shell_path: str
    login: bool
    environment_id: str
    remote: bool
    cwd: str
    sandbox_cwd: str
    # None for shell_command (classic execution); the unified-exec shell mode otherwise.
    mode: UnifiedExecShellMode | None
    tool: str
    index: int = 0


@dataclass(frozen=True)
class Turn:
    """What the handler needs to know about the turn."""

    environments: tuple[TurnEnvironment, ...]
    approval_policy: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    features: Features = field(default_factory=Features)
    unified_exec_shell_mode: UnifiedExecShellMode = UnifiedExecShellMode.DIRECT
    shell_zsh_path: str | None = None
    host: HostShellFacts = field(default_factory=HostShellFacts)
    grants: Grants = field(default_factory=Grants)


@dataclass(frozen=True)
class ShellCommandPlan:
    """A decoded shell_command call: one handler command per batch element."""

    params: ShellCommandParams
    commands: tuple[HandlerCommand, ...]
    permissions: PermissionOutcome
    timeout_ms: int
    warnings: tuple[str, ...]

    @property
    def is_batch(self) -> bool:
        """True for an array `command` (decision 3a)."""
        return isinstance(self.params.command, tuple)


@dataclass(frozen=True)
class ExecCommandPlan:
    """A decoded exec_command call."""

    params: ExecCommandParams
    command: HandlerCommand
    permissions: PermissionOutcome
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class WriteStdinPlan:
    """A decoded write_stdin call for a live session."""

    params: WriteStdinParams
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class ApplyPatchCall:
    """The freeform apply_patch tool's input (run by the apply_patch runtime)."""

    input: str


Plan = ShellCommandPlan | ExecCommandPlan | WriteStdinPlan | ApplyPatchCall


def resolve_login(login: bool | None, allow_login_shell: bool) -> bool | ToolError:
    """`use_login = login ?? allow_login_shell`; `login: true` needs login shells allowed."""
    if login is True and not allow_login_shell:
        return ToolError(LOGIN_DISABLED)
    return allow_login_shell if login is None else login


def _permissions(
    tool: str,
    sandbox: SandboxPermissions | None,
    params: ShellCommandParams | ExecCommandParams,
    env: TurnEnvironment,
    cwd: str,
    turn: Turn,
) -> PermissionOutcome | ToolError:
    return resolve_permissions(
        PermissionRequest(
            tool=tool,
            sandbox_permissions=sandbox or SandboxPermissions.USE_DEFAULT,
            additional_permissions=params.additional_permissions,
            environment_id=env.id,
            cwd=cwd,
            approval_policy=turn.approval_policy,
            exec_permission_approvals=turn.features.exec_permission_approvals,
            request_permissions_tool=turn.features.request_permissions_tool,
            grants=turn.grants,
        )
    )


def _handler_command(
    tool: str,
    shell: Shell,
    script: str,
    login: bool,
    env: TurnEnvironment,
    cwd: str,
    mode: UnifiedExecShellMode | None,
    index: int = 0,
) -> HandlerCommand:
    """The full shell invocation of one script in `env`, shared by both shell tools."""
    return HandlerCommand(
        argv=tuple(derive_exec_args(shell.type, shell.path, script, login)),
        shell_type=shell.type,
        shell_path=shell.path,
        login=login,
        environment_id=env.id,
        remote=env.remote,
        cwd=cwd,
        sandbox_cwd=env.cwd,
        mode=mode,
        tool=tool,
        index=index,
    )


def plan_shell_command(arguments: Arguments, turn: Turn) -> ShellCommandPlan | ToolError:
    """shell_command steps 2–8.2 (spec 02 §3.1, §3.2)."""
    workdir = shell_command_workdir(arguments)
    if isinstance(workdir, ToolError):
        return workdir
    env = select_environment("shell_command", turn.environments, None)
    if isinstance(env, ToolError):
        return env
    cwd = resolve_workdir(env.cwd, workdir)
    decoded = decode_shell_command(arguments, cwd, first_pass_done=True)
    if isinstance(decoded, ToolError):
        return decoded
    params = decoded.params
    use_login = resolve_login(params.login, env.allow_login_shell)
    if isinstance(use_login, ToolError):
        return use_login
    shell = base_shell(env, turn.host)
    if isinstance(shell, ToolError):
        return shell
    perms = _permissions("shell_command", params.sandbox_permissions, params, env, cwd, turn)
    if isinstance(perms, ToolError):
        return perms
    scripts = (params.command,) if isinstance(params.command, str) else params.command
    commands = tuple(
        _handler_command("shell_command", shell, script, use_login, env, cwd, None, index=i)
        for i, script in enumerate(scripts)
    )
    timeout = params.timeout_ms if params.timeout_ms is not None else DEFAULT_SHELL_TIMEOUT_MS
    return ShellCommandPlan(params, commands, perms, timeout, decoded.warnings)


def _exec_shell(
    env: TurnEnvironment, mode: UnifiedExecShellMode, params: ExecCommandParams, turn: Turn
) -> Shell | ToolError:
    """Steps 9–10: the base shell, then the remote `shell` assertion."""
    shell = base_shell(env, turn.host)
    if isinstance(shell, ToolError):
        return shell
    if env.remote and params.shell is not None:
        checked = remote_command(env.id, env.shell, params.shell, params.cmd, True)
        if isinstance(checked, ToolError):
            return checked
    return shell


def plan_exec_command(arguments: Arguments, turn: Turn) -> ExecCommandPlan | ToolError:
    """exec_command steps 2–13 (spec 02 §4.1)."""
    env_id = decode_exec_environment_id(arguments)
    if isinstance(env_id, ToolError):
        return env_id
    env = select_environment("exec_command", turn.environments, env_id)
    if isinstance(env, ToolError):
        return env
    workdir = decode_exec_workdir(arguments)
    if isinstance(workdir, ToolError):
        return workdir
    cwd = resolve_workdir(env.cwd, workdir)
    decoded = decode_exec_command(arguments, cwd, env_id)
    if isinstance(decoded, ToolError):
        return decoded
    params = decoded.params
    failed = exec_post_decode_check(params, turn.features.unified_exec_tty)
    if failed is not None:
        return failed
    mode = shell_mode_for_environment(turn.unified_exec_shell_mode, env.remote)
    shell = _exec_shell(env, mode, params, turn)
    if isinstance(shell, ToolError):
        return shell
    use_login = resolve_login(params.login, env.allow_login_shell)
    if isinstance(use_login, ToolError):
        return use_login
    if mode is UnifiedExecShellMode.ZSH_FORK and turn.shell_zsh_path is not None:
        derived = zsh_fork_command(turn.shell_zsh_path, params.shell, params.cmd, use_login)
        if isinstance(derived, ToolError):
            return derived
        shell = derived.shell
    elif params.shell is not None and not env.remote:
        shell = shell_by_model_provided_path(params.shell, turn.host)
    perms = _permissions("exec_command", params.sandbox_permissions, params, env, cwd, turn)
    if isinstance(perms, ToolError):
        return perms
    command = _handler_command("exec_command", shell, params.cmd, use_login, env, cwd, mode)
    return ExecCommandPlan(params, command, perms, decoded.warnings)


def plan_write_stdin(
    arguments: Arguments, session_exists: Callable[[int], bool]
) -> WriteStdinPlan | ToolError:
    """write_stdin steps 2–4 (spec 02 §4.2): the session lookup sits between the passes."""
    session_id = decode_session_id(arguments)
    if isinstance(session_id, ToolError):
        return session_id
    if not session_exists(session_id):
        return ToolError(f"write_stdin failed: Unknown process id {session_id}")
    decoded: Decoded[WriteStdinParams] | ToolError = decode_write_stdin(arguments)
    if isinstance(decoded, ToolError):
        return decoded
    return WriteStdinPlan(decoded.params, decoded.warnings)


def plan_tool_call(
    call: ToolCall,
    turn: Turn,
    registered: Collection[str],
    session_exists: Callable[[int], bool] = lambda _id: False,
) -> Plan | ToolError:
    """Dispatch a routed call to its handler (spec 01 §2.1) and run its decode steps."""
    name = call.tool_name.registry_name
    refused = dispatch_error(name, call.kind, registered)
    if refused is not None:
        return ToolError(refused)
    # One `Arguments` per call: every decode pass of the call reads it, and the text is
    # parsed at most once however many passes there are.
    if name == "shell_command":
        return plan_shell_command(Arguments(call.arguments), turn)
    if name == "exec_command":
        return plan_exec_command(Arguments(call.arguments), turn)
    if name == "write_stdin":
        return plan_write_stdin(Arguments(call.arguments), session_exists)
    if name == "apply_patch" and call.kind is PayloadKind.CUSTOM:
        return ApplyPatchCall(call.input)
    return ToolError(f"unsupported call: {name}")
