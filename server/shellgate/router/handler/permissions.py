"""Requested versus effective permissions, with every error text (spec 02 §8).

`resolve_permissions(request)` runs the merge with granted permissions, the approval-policy
guard and `normalize_and_validate_additional_permissions`; it returns a `PermissionOutcome`
that keeps the requested **and** the effective values, or a `ToolError` with the exact text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from shellgate.router.decode.params import (
    AdditionalPermissions,
    FileSystemAccess,
    FileSystemRequest,
)
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tool_call import ToolError
from shellgate.router.decode.workdir import join_path
from shellgate.router.policy.approval_policy import ApprovalMode, ApprovalPolicy


@dataclass(frozen=True)
class PermissionProfile:
    """A materialised permission profile: network flag and (path, access) entries."""

    network_enabled: bool = False
    entries: frozenset[tuple[str, FileSystemAccess]] = frozenset()
    glob_scan_max_depth: int | None = None

    @property
    def is_empty(self) -> bool:
        """No network and no filesystem entries."""
        return not self.network_enabled and not self.entries


@dataclass(frozen=True)
class Grants:
    """Granted permissions: session scope, and turn scope per environment id."""

    session: PermissionProfile | None = None
    turn: Mapping[str, PermissionProfile] = field(default_factory=dict)


@dataclass(frozen=True)
class PermissionRequest:
    """Everything §8 needs about one call."""

    tool: str
    sandbox_permissions: SandboxPermissions
    additional_permissions: AdditionalPermissions | None
    environment_id: str
    cwd: str
    approval_policy: ApprovalPolicy
    exec_permission_approvals: bool = False
    request_permissions_tool: bool = False
    grants: Grants = Grants()


@dataclass(frozen=True)
class PermissionOutcome:
    """Requested and effective permissions of a handler command."""

    requested_sandbox: SandboxPermissions
    requested_profile: PermissionProfile | None
    effective_sandbox: SandboxPermissions
    effective_profile: PermissionProfile | None
    preapproved: bool

    @property
    def policy_sandbox(self) -> SandboxPermissions:
        """The value the exec-policy requirement sees (§8 step 7)."""
        return SandboxPermissions.USE_DEFAULT if self.preapproved else self.effective_sandbox


DISABLED_TEXT: Final = (
    "additional permissions are disabled; enable `features.exec_permission_approvals` before "
    "using `with_additional_permissions`"
)
MISSING_TEXT: Final = (
    "missing `additional_permissions`; provide at least one of `network` or `file_system` when "
    "using `with_additional_permissions`"
)
EMPTY_TEXT: Final = (
    "`additional_permissions` must include at least one requested permission in `network` or "
    "`file_system`"
)
MODE_TEXT: Final = (
    "`additional_permissions` requires `sandbox_permissions` set to `with_additional_permissions`"
)


def guard_text(tool: str, policy: ApprovalPolicy) -> str:
    """The approval-policy guard text; shell_command says "should not", exec_command "cannot"."""
    p = policy.debug()
    verb = "should not" if tool == "shell_command" else "cannot"
    return (
        f"approval policy is {p}; reject command — you {verb} ask for escalated permissions if "
        f"the approval policy is {p}"
    )


def _fs_entries(fs: FileSystemRequest, cwd: str) -> frozenset[tuple[str, FileSystemAccess]]:
    out: set[tuple[str, FileSystemAccess]] = set()
    for paths, access in ((fs.read, FileSystemAccess.READ), (fs.write, FileSystemAccess.WRITE)):
        out.update((join_path(cwd, p), access) for p in paths or ())
    out.update((join_path(cwd, e.path), e.access) for e in fs.entries or ())
    return frozenset(out)


def materialize(request: AdditionalPermissions | None, cwd: str) -> PermissionProfile | None:
    """The requested profile as data (relative paths against `cwd`); None when absent."""
    if request is None:
        return None
    fs = request.file_system
    return PermissionProfile(
        network_enabled=bool(request.network_enabled),
        entries=_fs_entries(fs, cwd) if fs is not None else frozenset(),
        glob_scan_max_depth=fs.glob_scan_max_depth if fs is not None else None,
    )


def merge(a: PermissionProfile | None, b: PermissionProfile | None) -> PermissionProfile | None:
    """Union of two profiles (None when both are absent)."""
    if a is None or b is None:
        return a if b is None else b
    depth = a.glob_scan_max_depth if b.glob_scan_max_depth is None else b.glob_scan_max_depth
    return PermissionProfile(a.network_enabled or b.network_enabled, a.entries | b.entries, depth)


def resolve_permissions(req: PermissionRequest) -> PermissionOutcome | ToolError:
    """§8 steps 1–6."""
    requested = materialize(req.additional_permissions, req.cwd)
    sandbox = req.sandbox_permissions
    effective = requested
    preapproved = False
    if sandbox is not SandboxPermissions.REQUIRE_ESCALATED:
        granted = merge(req.grants.session, req.grants.turn.get(req.environment_id))
        effective = merge(requested, granted)
        if granted is not None:
            preapproved = requested is None or effective == granted
        if effective is not None and sandbox is not SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS:
            sandbox = SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS
    allowed = req.exec_permission_approvals or (req.request_permissions_tool and preapproved)
    on_request = req.approval_policy.mode is ApprovalMode.ON_REQUEST
    if sandbox.requests_override and not preapproved and not on_request:
        return ToolError(guard_text(req.tool, req.approval_policy))
    outcome = PermissionOutcome(req.sandbox_permissions, requested, sandbox, effective, preapproved)
    implicit = (
        req.sandbox_permissions is SandboxPermissions.USE_DEFAULT
        and req.additional_permissions is None
        and effective is not None
    )
    if implicit:
        return outcome
    with_additional = sandbox is SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS
    given = req.additional_permissions is not None
    if not preapproved and not allowed and (with_additional or given):
        return ToolError(DISABLED_TEXT)
    if with_additional and not preapproved and not on_request:
        return ToolError(
            f"approval policy is {req.approval_policy.debug()}; reject command — you cannot "
            "request additional permissions unless the approval policy is OnRequest"
        )
    if with_additional and effective is None:
        return ToolError(MISSING_TEXT)
    if effective is not None and effective.is_empty:
        return ToolError(EMPTY_TEXT)
    if effective is not None and not with_additional:
        return ToolError(MODE_TEXT)
    return outcome
