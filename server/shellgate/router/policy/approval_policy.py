"""The turn's approval policy and a call's requested sandbox permissions (domain types).

One definition each, read by decode, the handler's permission merge (spec 02 §8), the exec
policy (spec 04 §4) and the runtime gates. Where the policy engine folds the legacy
`on-failure` into `never` it does so in its own logic (`policy.context.engine_mode`); the
value itself stays `ON_FAILURE` so the handler's guard text and the sandbox-retry offer can
tell it apart.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass


class ApprovalMode(enum.StrEnum):
    """`AskForApproval` variants, including the legacy `on-failure`."""

    NEVER = "never"
    ON_FAILURE = "on_failure"
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

    def debug(self) -> str:
        """Rust's `{:?}` rendering of `GranularApprovalConfig`."""
        flags = ", ".join(
            f"{f.name}: {'true' if getattr(self, f.name) else 'false'}"
            for f in dataclasses.fields(self)
        )
        return f"GranularApprovalConfig {{ {flags} }}"


@dataclass(frozen=True)
class ApprovalPolicy:
    """The turn's approval policy; `granular` is set exactly when the mode is GRANULAR."""

    mode: ApprovalMode = ApprovalMode.ON_REQUEST
    granular: GranularApproval | None = None

    def __post_init__(self) -> None:
        # One canonical form, so equal policies compare equal: a granular policy always
        # carries its switches (all on unless given), any other mode none.
        if self.mode is ApprovalMode.GRANULAR and self.granular is None:
            object.__setattr__(self, "granular", GranularApproval())
        elif self.mode is not ApprovalMode.GRANULAR and self.granular is not None:
            object.__setattr__(self, "granular", None)

    def debug(self) -> str:
        """Rust's `{:?}` rendering of the policy (`Never`, `OnFailure`, `Granular(…)`, …)."""
        if self.granular is not None:
            return f"Granular({self.granular.debug()})"
        return "".join(part.capitalize() for part in self.mode.value.split("_"))
