"""The `sandbox_permissions` argument of a shell tool call, as Codex declares it."""

from __future__ import annotations

import enum

__all__ = ["SandboxPermissions"]


class SandboxPermissions(enum.StrEnum):
    """The `sandbox_permissions` values, in Codex's declaration order."""

    USE_DEFAULT = "use_default"
    REQUIRE_ESCALATED = "require_escalated"
    WITH_ADDITIONAL_PERMISSIONS = "with_additional_permissions"

    @property
    def requests_override(self) -> bool:
        """Anything but `use_default` asks to leave or widen the sandbox."""
        return self is not SandboxPermissions.USE_DEFAULT
