"""Turn context that the unmatched-command heuristics read (spec 04 §4)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from shellgate.router.policy_projection import CommandOrigin


class ApprovalMode(enum.StrEnum):
    """`AskForApproval` variants (`on-failure` is treated as `never`)."""

    NEVER = "never"
    ON_REQUEST = "on_request"
    UNLESS_TRUSTED = "unless_trusted"
    GRANULAR = "granular"


@dataclass(frozen=True)
class GranularApproval:
    """The five switches of `AskForApproval::Granular`."""

    sandbox_approval: bool = True
    rules: bool = True
    skill_approval: bool = True
    request_permissions: bool = True
    mcp_elicitations: bool = True


@dataclass(frozen=True)
class ApprovalPolicy:
    """The turn's approval policy; `granular` is set only for mode GRANULAR."""

    mode: ApprovalMode
    granular: GranularApproval | None = None


class PermissionProfile(enum.StrEnum):
    """Permission profiles: `disabled` is danger-full-access, `external` an external sandbox."""

    DISABLED = "disabled"
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL = "external"

    @property
    def restricted(self) -> bool:
        """Managed profiles restrict the filesystem."""
        return self in (PermissionProfile.READ_ONLY, PermissionProfile.WORKSPACE_WRITE)


class WindowsSandboxLevel(enum.StrEnum):
    """Windows sandbox backend level (matters only on Windows hosts)."""

    DISABLED = "disabled"
    RESTRICTED_TOKEN = "restricted_token"
    ELEVATED = "elevated"


class SandboxPermissions(enum.StrEnum):
    """Effective `sandbox_permissions` of the call."""

    USE_DEFAULT = "use_default"
    REQUIRE_ESCALATED = "require_escalated"
    WITH_ADDITIONAL_PERMISSIONS = "with_additional_permissions"

    @property
    def requests_override(self) -> bool:
        """Anything but `use_default` asks to leave or widen the sandbox."""
        return self is not SandboxPermissions.USE_DEFAULT


@dataclass(frozen=True)
class UnmatchedContext:
    """Everything `render_decision_for_unmatched_command` reads besides the command."""

    approval_policy: ApprovalPolicy
    permission_profile: PermissionProfile
    sandbox_permissions: SandboxPermissions = SandboxPermissions.USE_DEFAULT
    windows_sandbox_level: WindowsSandboxLevel = WindowsSandboxLevel.RESTRICTED_TOKEN
    used_complex_parsing: bool = False
    command_origin: CommandOrigin = CommandOrigin.GENERIC
    # shellgate hosts are POSIX; kept explicit so the Windows-only step reads as a no-op.
    windows_host: bool = False
