"""Turn context that the unmatched-command heuristics read (spec 04 §4)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.policy.approval_policy import ApprovalMode, ApprovalPolicy, GranularApproval
from shellgate.router.policy_projection import CommandOrigin

__all__ = [
    "ApprovalMode",
    "ApprovalPolicy",
    "GranularApproval",
    "SandboxPermissions",
    "SandboxProfile",
    "UnmatchedContext",
    "WindowsSandboxLevel",
    "engine_mode",
]


def engine_mode(policy: ApprovalPolicy) -> ApprovalMode:
    """The mode the exec policy acts on: the legacy `on-failure` counts as `never` (04 §4)."""
    return ApprovalMode.NEVER if policy.mode is ApprovalMode.ON_FAILURE else policy.mode


class SandboxProfile(enum.StrEnum):
    """The turn's sandbox mode (its permission profile kind): `disabled` is danger-full-access,
    `external` an external sandbox. (`handler.permissions.PermissionProfile` is another
    thing: the additional permissions a call requests.)"""

    DISABLED = "disabled"
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL = "external"

    @property
    def restricted(self) -> bool:
        """Managed profiles restrict the filesystem."""
        return self in (SandboxProfile.READ_ONLY, SandboxProfile.WORKSPACE_WRITE)

    def network(self, network_access: bool) -> bool:
        """Whether this profile's commands have the network, given the turn's flag (spec 06 §7).

        As Codex 0.169: read-only never (its `network_access` is workspace-write's key),
        workspace-write and an external sandbox as the flag says, danger-full-access always.
        """
        if self is SandboxProfile.DISABLED:
            return True
        return network_access and self is not SandboxProfile.READ_ONLY


class WindowsSandboxLevel(enum.StrEnum):
    """Windows sandbox backend level (matters only on Windows hosts)."""

    DISABLED = "disabled"
    RESTRICTED_TOKEN = "restricted_token"
    ELEVATED = "elevated"


@dataclass(frozen=True)
class UnmatchedContext:
    """Everything `render_decision_for_unmatched_command` reads besides the command."""

    approval_policy: ApprovalPolicy
    permission_profile: SandboxProfile
    sandbox_permissions: SandboxPermissions = SandboxPermissions.USE_DEFAULT
    windows_sandbox_level: WindowsSandboxLevel = WindowsSandboxLevel.RESTRICTED_TOKEN
    used_complex_parsing: bool = False
    command_origin: CommandOrigin = CommandOrigin.GENERIC
    # shellgate hosts are POSIX; kept explicit so the Windows-only step reads as a no-op.
    windows_host: bool = False
