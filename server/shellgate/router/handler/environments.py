"""Turn environments, selection and the shell each one runs (spec 02 §1, §4.3, §4.4).

Pure functions over `TurnEnvironment` values; the environment registry (I/O) builds them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from shellgate.router.decode.tool_call import ToolError
from shellgate.router.decode.tools import UnifiedExecShellMode
from shellgate.router.handler.shells import (
    HostShellFacts,
    Shell,
    ShellType,
    derive_exec_args,
    detect_shell_type,
    host_user_shell,
)

LOCAL_ENVIRONMENT_ID: Final = "local"
_RESERVED_IDS: Final = frozenset({"local", "none"})
_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
REPORTED_SHELL_NAMES: Final = ("zsh", "bash", "powershell", "sh", "cmd")
ZSH_FORK_SHELL_REJECTED: Final = (
    "`shell` is not supported for local zsh-fork exec; omit `shell` to use zsh-fork, or target "
    "a remote environment where `shell` is supported."
)


@dataclass(frozen=True)
class ReportedShell:
    """Environment info's shell: a name (`bash`, …) and a path."""

    name: str
    path: str


@dataclass(frozen=True)
class TurnEnvironment:
    """One environment selected for the turn (the first one is primary)."""

    id: str
    cwd: str
    remote: bool = False
    # Remote: what the daemon reports (None: reports no shell). Local: None → host user shell.
    shell: ReportedShell | None = None
    allow_login_shell: bool = True


def select_environment(
    tool: str, environments: Sequence[TurnEnvironment], environment_id: str | None
) -> TurnEnvironment | ToolError:
    """The environment a call runs in (spec 02 §1)."""
    if not environments:
        if tool == "shell_command":
            return ToolError("shell is unavailable in this session")
        return ToolError("unified exec is unavailable in this session")
    if tool != "exec_command" or environment_id is None:
        return environments[0]
    for env in environments:
        if env.id == environment_id:
            return env
    return ToolError(f"unknown turn environment id `{environment_id}`")


def reported_shell(env_id: str, shell: ReportedShell | None) -> Shell | ToolError:
    """A remote environment's shell as a `Shell`, or the error the model sees."""
    if shell is None:
        return ToolError(f"environment `{env_id}` does not report a shell")
    if shell.name not in REPORTED_SHELL_NAMES:
        return ToolError(f"unknown environment shell `{shell.name}`")
    return Shell(ShellType(shell.name), shell.path)


def base_shell(env: TurnEnvironment, facts: HostShellFacts) -> Shell | ToolError:
    """The environment's reported shell, or the host user shell for a local one (§4.1 step 9).

    shellgate never falls back to the host's shell for a remote environment (spec 06 §5,
    a deliberate difference from Codex, which uses the session shell): a remote environment
    that reports no shell answers ``environment `{id}` does not report a shell``.
    """
    if env.shell is not None or env.remote:
        return reported_shell(env.id, env.shell)
    return host_user_shell(facts)


def shell_mode_for_environment(
    turn_mode: UnifiedExecShellMode, remote: bool
) -> UnifiedExecShellMode:
    """Remote environments always use Direct mode."""
    return UnifiedExecShellMode.DIRECT if remote else turn_mode


@dataclass(frozen=True)
class DerivedCommand:
    """An argv with the shell that runs it."""

    argv: tuple[str, ...]
    shell: Shell


def remote_command(
    env_id: str,
    shell: ReportedShell | None,
    requested: str | None,
    cmd: str,
    login: bool,
) -> DerivedCommand | ToolError:
    """Remote Direct mode: the reported shell runs; `requested` is only checked (§4.3)."""
    found = reported_shell(env_id, shell)
    if isinstance(found, ToolError):
        return found
    if requested is not None and detect_shell_type(requested) is not found.type:
        return ToolError(f"environment `{env_id}` only supports `{found.type.value}`")
    return DerivedCommand(tuple(derive_exec_args(found.type, found.path, cmd, login)), found)


def zsh_fork_command(
    zsh_path: str, requested: str | None, cmd: str, login: bool
) -> DerivedCommand | ToolError:
    """Local zsh-fork mode: `[zsh, -lc|-c, cmd]`; an explicit `shell` is rejected (§4.4)."""
    if requested is not None:
        return ToolError(ZSH_FORK_SHELL_REJECTED)
    shell = Shell(ShellType.ZSH, zsh_path)
    return DerivedCommand(tuple(derive_exec_args(shell.type, zsh_path, cmd, login)), shell)
