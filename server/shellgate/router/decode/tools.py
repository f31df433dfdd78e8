"""Which shell tools exist, how they register, and their exact JSON specs (spec 01 §3–§4).

Domain API (pure):

* `shell_type_for_model_and_features(model_type, features, conpty_supported)` → the resolved
  `ShellToolType` and the `UnifiedExecFeatureMode` (§3.2);
* `register_shell_tools(shell_type, environments, shell_mode)` → `ToolRegistration`
  (model-visible and hidden tools, schema switches; §3.3);
* `shell_command_tool`, `exec_command_tool`, `write_stdin_tool`, `APPLY_PATCH_TOOL` — the
  Responses API `tools` entries, key order exactly as Codex 0.169.0 sends them;
* `list_tools(config)` → the `tools` entries a turn configuration exposes (`ListTools`).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shellgate.router.decode.tool_schemas import (
    APPLY_PATCH_TOOL,
    SchemaSwitches,
    exec_command_tool,
    shell_command_tool,
    write_stdin_tool,
)

__all__ = [
    "APPLY_PATCH_TOOL",
    "ConfigShellToolType",
    "EnvironmentRef",
    "Features",
    "SchemaSwitches",
    "ShellToolType",
    "ToolRegistration",
    "ToolsConfig",
    "UnifiedExecFeatureMode",
    "UnifiedExecShellMode",
    "exec_command_tool",
    "list_tools",
    "register_shell_tools",
    "shell_command_tool",
    "shell_type_for_model_and_features",
    "write_stdin_tool",
]


class ConfigShellToolType(enum.StrEnum):
    """The model catalogue's shell tool type."""

    DEFAULT = "default"
    LOCAL = "local"
    UNIFIED_EXEC = "unified_exec"
    DISABLED = "disabled"
    SHELL_COMMAND = "shell_command"


class ShellToolType(enum.StrEnum):
    """The resolved shell tool type."""

    SHELL_COMMAND = "shell_command"
    UNIFIED_EXEC = "unified_exec"
    DISABLED = "disabled"


class UnifiedExecFeatureMode(enum.StrEnum):
    """Unified-exec feature mode (§3.2 step 1)."""

    DISABLED = "disabled"
    DIRECT = "direct"
    ZSH_FORK = "zsh_fork"


class UnifiedExecShellMode(enum.StrEnum):
    """The session's unified-exec shell mode."""

    DIRECT = "direct"
    ZSH_FORK = "zsh_fork"


@dataclass(frozen=True)
class Features:
    """Feature switches that shape the shell tools (defaults as in Codex off Windows)."""

    shell_tool: bool = True
    unified_exec: bool = True
    unified_exec_tty: bool = True
    shell_zsh_fork: bool = False
    unified_exec_zsh_fork: bool = False
    exec_permission_approvals: bool = False
    request_permissions_tool: bool = False

    @classmethod
    def only(cls, enabled: Iterable[str]) -> Features:
        """Exactly the named features on, every other one off."""
        names = set(enabled)
        return cls(**{name: name in names for name in cls.__dataclass_fields__})


def shell_type_for_model_and_features(
    model_type: ConfigShellToolType, features: Features, conpty_supported: bool = True
) -> tuple[ShellToolType, UnifiedExecFeatureMode]:
    """Resolve the shell tool type (after Codex PR #24979)."""
    if not features.shell_tool or not features.unified_exec:
        mode = UnifiedExecFeatureMode.DISABLED
    elif features.shell_zsh_fork:
        zsh = features.unified_exec_zsh_fork
        mode = UnifiedExecFeatureMode.ZSH_FORK if zsh else UnifiedExecFeatureMode.DISABLED
    else:
        mode = UnifiedExecFeatureMode.DIRECT
    normalised = model_type
    if model_type in (ConfigShellToolType.DEFAULT, ConfigShellToolType.LOCAL) or (
        model_type is ConfigShellToolType.UNIFIED_EXEC and mode is UnifiedExecFeatureMode.DISABLED
    ):
        normalised = ConfigShellToolType.SHELL_COMMAND
    if features.shell_tool and features.shell_zsh_fork:
        normalised = ConfigShellToolType.SHELL_COMMAND
    if not features.shell_tool:
        return ShellToolType.DISABLED, mode
    if mode is UnifiedExecFeatureMode.DISABLED:
        return ShellToolType(normalised.value), mode
    if conpty_supported:
        return ShellToolType.UNIFIED_EXEC, mode
    return ShellToolType.SHELL_COMMAND, mode


@dataclass(frozen=True)
class EnvironmentRef:
    """What registration needs to know about a turn environment."""

    id: str
    remote: bool


@dataclass(frozen=True)
class ToolRegistration:
    """Registered shell tools and the exec_command schema switches."""

    model_visible: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    exec_command_has_shell: bool = False
    exec_command_has_environment_id: bool = False

    @property
    def registered(self) -> frozenset[str]:
        """Every dispatchable tool name."""
        return frozenset(self.model_visible) | frozenset(self.hidden)


def register_shell_tools(
    shell_type: ShellToolType,
    environments: Sequence[EnvironmentRef],
    shell_mode: UnifiedExecShellMode,
) -> ToolRegistration:
    """`add_shell_tools` (§3.3)."""
    single_local = len(environments) == 1 and not environments[0].remote
    if not environments or shell_type is ShellToolType.DISABLED:
        return ToolRegistration()
    if shell_type is ShellToolType.SHELL_COMMAND:
        return ToolRegistration(model_visible=("shell_command",) if single_local else ())
    any_remote = any(env.remote for env in environments)
    return ToolRegistration(
        model_visible=("exec_command", "write_stdin"),
        hidden=("shell_command",) if single_local else (),
        exec_command_has_shell=not (shell_mode is UnifiedExecShellMode.ZSH_FORK and not any_remote),
        exec_command_has_environment_id=len(environments) > 1,
    )


@dataclass(frozen=True)
class ToolsConfig:
    """A turn's tool configuration, as `ListTools` receives it."""

    model_shell_type: ConfigShellToolType = ConfigShellToolType.DEFAULT
    features: Features = Features()
    environments: tuple[EnvironmentRef, ...] = (EnvironmentRef("local", False),)
    # Any environment allows login shells (only shell_command's `login` depends on it).
    allow_login_shell: bool = True
    unified_exec_shell_mode: UnifiedExecShellMode = UnifiedExecShellMode.DIRECT
    apply_patch_freeform: bool = True
    advertise_command_batches: bool = False
    windows: bool = False
    conpty_supported: bool = True


FREEFORM: Final = "freeform"


def list_tools(config: ToolsConfig) -> list[dict[str, Any]]:
    """The Responses API `tools` entries for a turn (shell tools, then apply_patch)."""
    shell_type, _ = shell_type_for_model_and_features(
        config.model_shell_type, config.features, config.conpty_supported
    )
    registration = register_shell_tools(
        shell_type, config.environments, config.unified_exec_shell_mode
    )
    switches = SchemaSwitches(
        allow_login_shell=config.allow_login_shell,
        exec_permission_approvals=config.features.exec_permission_approvals,
        include_shell_parameter=registration.exec_command_has_shell,
        include_environment_id=registration.exec_command_has_environment_id,
        unified_exec_tty=config.features.unified_exec_tty,
        advertise_command_batches=config.advertise_command_batches,
        windows=config.windows,
    )
    tools: list[dict[str, Any]] = []
    for name in registration.model_visible:
        if name == "shell_command":
            tools.append(shell_command_tool(switches))
        elif name == "exec_command":
            tools.append(exec_command_tool(switches))
        else:
            tools.append(write_stdin_tool(switches))
    if config.apply_patch_freeform:
        tools.append(copy.deepcopy(APPLY_PATCH_TOOL))
    return tools
