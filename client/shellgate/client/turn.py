"""Build a TurnContext from plain Python values (or protobuf JSON)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from google.protobuf import json_format
from shellgate.v1 import common_pb2, shell_pb2

__all__ = [
    "TurnLike",
    "to_turn_context",
    "turn_context",
    "turn_from_json",
]

# A TurnContext, its protobuf-JSON mapping as a dict, or None for the router's defaults.
TurnLike = common_pb2.TurnContext | Mapping[str, Any] | None

_APPROVAL = {
    "never": common_pb2.APPROVAL_POLICY_KIND_NEVER,
    "on-failure": common_pb2.APPROVAL_POLICY_KIND_ON_FAILURE,
    "on-request": common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST,
    "untrusted": common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED,
    "granular": common_pb2.APPROVAL_POLICY_KIND_GRANULAR,
}
_PROFILE = {
    "read-only": common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY,
    "workspace-write": common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE,
    "danger-full-access": common_pb2.PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS,
    "external-sandbox": common_pb2.PERMISSION_PROFILE_KIND_EXTERNAL_SANDBOX,
}
_SHELL_TOOL = {
    "default": common_pb2.MODEL_SHELL_TOOL_TYPE_DEFAULT,
    "local": common_pb2.MODEL_SHELL_TOOL_TYPE_LOCAL,
    "unified_exec": common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC,
    "disabled": common_pb2.MODEL_SHELL_TOOL_TYPE_DISABLED,
    "shell_command": common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND,
}
_APPLY_PATCH = {
    "freeform": common_pb2.APPLY_PATCH_TOOL_TYPE_FREEFORM,
    "disabled": common_pb2.APPLY_PATCH_TOOL_TYPE_DISABLED,
}
_INHERIT = {
    "all": shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL,
    "core": shell_pb2.SHELL_ENVIRONMENT_INHERIT_CORE,
    "none": shell_pb2.SHELL_ENVIRONMENT_INHERIT_NONE,
}
_FEATURES = frozenset(common_pb2.FeatureSwitches.DESCRIPTOR.fields_by_name)
_GRANULAR = frozenset(common_pb2.GranularApprovalPolicy.DESCRIPTOR.fields_by_name)


_V = TypeVar("_V")


def _lookup(table: Mapping[str, _V], value: str, what: str) -> _V:
    # Accept `on_request` as well as `on-request`: config files use both spellings.
    key = value.strip().lower()
    for candidate in (key, key.replace("_", "-"), key.replace("-", "_")):
        if candidate in table:
            return table[candidate]
    raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(table)}")


def _environments(
    environments: Sequence[str | tuple[str, str]] | None, cwd: str | None
) -> list[common_pb2.TurnEnvironment]:
    result: list[common_pb2.TurnEnvironment] = []
    for entry in environments or ():
        env_id, env_cwd = (entry, "") if isinstance(entry, str) else entry
        result.append(common_pb2.TurnEnvironment(environment_id=env_id, cwd=env_cwd))
    if cwd is not None:
        # `cwd` applies to the primary environment (`local` when none was named).
        if not result:
            result.append(common_pb2.TurnEnvironment(environment_id="local"))
        result[0].cwd = cwd
    return result


def _env_policy(
    value: str | Mapping[str, Any] | shell_pb2.ShellEnvironmentPolicy,
) -> shell_pb2.ShellEnvironmentPolicy:
    if isinstance(value, shell_pb2.ShellEnvironmentPolicy):
        return value
    if isinstance(value, str):
        return shell_pb2.ShellEnvironmentPolicy(inherit=_lookup(_INHERIT, value, "inherit"))
    policy = shell_pb2.ShellEnvironmentPolicy()
    for key, item in value.items():
        if key == "inherit":
            policy.inherit = _lookup(_INHERIT, str(item), "inherit")
        elif key == "ignore_default_excludes":
            policy.ignore_default_excludes = bool(item)
        elif key in ("exclude", "include_only"):
            getattr(policy, key).extend(str(pattern) for pattern in item)
        elif key == "set":
            policy.set.update({str(k): str(v) for k, v in item.items()})
        else:
            raise ValueError(f"unknown shell_environment_policy key {key!r}")
    return policy


def turn_context(
    *,
    environments: Sequence[str | tuple[str, str]] | None = None,
    cwd: str | None = None,
    approval_policy: str | None = None,
    granular: Mapping[str, bool] | None = None,
    permission_profile: str | None = None,
    writable_roots: Sequence[str] = (),
    network_access: bool | None = None,
    active_profile_id: str | None = None,
    shell_environment_policy: str | Mapping[str, Any] | shell_pb2.ShellEnvironmentPolicy
    | None = None,
    shell_tool_type: str | None = None,
    features: Mapping[str, bool] | None = None,
    allow_login_shell: bool | None = None,
    truncation_tokens: int | None = None,
    truncation_bytes: int | None = None,
    apply_patch_tool: str | None = None,
    advertise_command_batches: bool | None = None,
) -> common_pb2.TurnContext:
    """A TurnContext; every argument left None keeps the router's configured default.

    Names follow the spec's spelling: approval policies `never`, `on-failure`, `on-request`,
    `untrusted`, `granular` (with `granular` switches); profiles `read-only`,
    `workspace-write`, `danger-full-access`, `external-sandbox`; shell tool types `default`,
    `local`, `unified_exec`, `disabled`, `shell_command`.
    """
    turn = common_pb2.TurnContext()
    turn.environments.extend(_environments(environments, cwd))
    if approval_policy is not None:
        kind = _lookup(_APPROVAL, approval_policy, "approval policy")
        turn.approval_policy.kind = kind
        if kind == common_pb2.APPROVAL_POLICY_KIND_GRANULAR or granular:
            for name, enabled in (granular or {}).items():
                if name not in _GRANULAR:
                    raise ValueError(f"unknown granular switch {name!r}")
                setattr(turn.approval_policy.granular, name, bool(enabled))
            turn.approval_policy.granular.SetInParent()
    if permission_profile is not None or writable_roots or network_access is not None:
        profile = turn.permission_profile
        if permission_profile is not None:
            profile.kind = _lookup(_PROFILE, permission_profile, "permission profile")
        profile.writable_roots.extend(writable_roots)
        if network_access is not None:
            profile.network_access = network_access
        profile.SetInParent()
    if active_profile_id is not None:
        turn.permission_profile.active_profile_id = active_profile_id
    if shell_environment_policy is not None:
        turn.shell_environment_policy.CopyFrom(_env_policy(shell_environment_policy))
    if shell_tool_type is not None:
        turn.shell_tool_type = _lookup(_SHELL_TOOL, shell_tool_type, "shell tool type")
    for name, enabled in (features or {}).items():
        if name not in _FEATURES:
            raise ValueError(f"unknown feature switch {name!r}; expected one of {sorted(_FEATURES)}")
        setattr(turn.features, name, bool(enabled))
    if allow_login_shell is not None:
        turn.allow_login_shell = allow_login_shell
    if truncation_tokens is not None and truncation_bytes is not None:
        raise ValueError("give truncation_tokens or truncation_bytes, not both")
    if truncation_tokens is not None:
        turn.truncation_policy.tokens = truncation_tokens
    if truncation_bytes is not None:
        turn.truncation_policy.bytes = truncation_bytes
    if apply_patch_tool is not None:
        turn.apply_patch_tool = _lookup(_APPLY_PATCH, apply_patch_tool, "apply_patch tool")
    if advertise_command_batches is not None:
        turn.advertise_command_batches = advertise_command_batches
    return turn


def turn_from_json(text: str) -> common_pb2.TurnContext:
    """A TurnContext from its protobuf JSON mapping (unknown fields are an error)."""
    return json_format.Parse(text, common_pb2.TurnContext())


def to_turn_context(turn: TurnLike) -> common_pb2.TurnContext:
    """Coerce a TurnLike: None → empty (router defaults), dict → protobuf JSON mapping."""
    if turn is None:
        return common_pb2.TurnContext()
    if isinstance(turn, common_pb2.TurnContext):
        return turn
    return json_format.ParseDict(dict(turn), common_pb2.TurnContext())
