"""The projection of one model output item: domain types shared by `Project` and `Execute`.

A `ProjectedCall` is what the pipeline (`pipeline.project`) computes without side effects:
the routed call, and exactly one outcome — no tool call, a tool error text, a shell call
(one element, or several for a shell_command batch), the apply_patch custom tool, or a
write_stdin request. Each shell element is either an ordinary command with its three
independent projections (A envelope, B policy, C approval identity), display metadata and
approval requirement, or an intercepted apply_patch.
"""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.apply_patch import ApplyPatchAction, CorrectnessError
from shellgate.router.approval_identity import ApprovalKey
from shellgate.router.bash.segments import ScriptCommand
from shellgate.router.decode.params import WriteStdinParams
from shellgate.router.decode.tool_call import PayloadKind, ToolName
from shellgate.router.display.types import ParsedCommand
from shellgate.router.envelope import ExecutionEnvelope
from shellgate.router.handler.permissions import PermissionOutcome
from shellgate.router.handler.plan import HandlerCommand
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.policy import ApprovalOutcome
from shellgate.router.policy_projection import PolicyProjection


@dataclass(frozen=True)
class CommandElement:
    """An ordinary shell command: handler command plus A, B, C, display and requirement."""

    handler: HandlerCommand
    envelope: ExecutionEnvelope
    policy: PolicyProjection
    literal_commands: tuple[ScriptCommand, ...] | None
    approval_key: ApprovalKey
    display: tuple[ParsedCommand, ...]
    approval: ApprovalOutcome
    prefix_rule: tuple[str, ...] | None


@dataclass(frozen=True)
class PatchElement:
    """A handler command recognised as apply_patch: a verified action or the error text."""

    handler: HandlerCommand
    envelope: ExecutionEnvelope
    result: ApplyPatchAction | CorrectnessError


ShellElement = CommandElement | PatchElement


@dataclass(frozen=True)
class ShellCall:
    """A shell_command or exec_command call: its elements in order."""

    tool: str
    elements: tuple[ShellElement, ...]
    batch: bool
    permissions: PermissionOutcome


@dataclass(frozen=True)
class NoToolCallOutcome:
    """The item is not a tool call shellgate dispatches (messages, reasoning, …)."""

    reason: str


@dataclass(frozen=True)
class ToolErrorOutcome:
    """The exact text the model receives instead of running anything."""

    text: str


@dataclass(frozen=True)
class ApplyPatchToolCall:
    """The freeform apply_patch custom tool: patch text, the cwd it applies in, verification."""

    patch: str
    environment_id: str
    cwd: str
    result: ApplyPatchAction | CorrectnessError


@dataclass(frozen=True)
class WriteStdinCall:
    """A write_stdin call for a session of the thread."""

    params: WriteStdinParams
    yield_time_ms: int
    output_policy: TruncationPolicy


Outcome = NoToolCallOutcome | ToolErrorOutcome | ShellCall | ApplyPatchToolCall | WriteStdinCall


@dataclass(frozen=True)
class ProjectedCall:
    """One decoded and projected model output item."""

    call_id: str
    tool_name: ToolName | None
    payload_kind: PayloadKind | None
    outcome: Outcome
    warnings: tuple[str, ...] = ()
