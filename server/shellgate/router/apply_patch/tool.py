"""The `apply_patch` custom tool (spec 06 §10): its tools entry and its runtime result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shellgate.router.apply_patch.apply import PatchOutcome, apply_patch_action
from shellgate.router.apply_patch.fs import PatchFileSystem
from shellgate.router.apply_patch.verify import (
    ApplyPatchAction,
    CorrectnessError,
    NotApplyPatch,
    verify_patch_text,
)

EMPTY_PATCH_REJECTION = "patch rejected: empty patch"
PATCH_DECLINED = "patch rejected by user"

_GRAMMAR = (
    'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\n'
    'end_patch: "*** End Patch" LF?\n\nhunk: add_hunk | delete_hunk | update_hunk\n'
    'add_hunk: "*** Add File: " filename LF add_line+\ndelete_hunk: "*** Delete File: " '
    'filename LF\nupdate_hunk: "*** Update File: " filename LF change_move? change?\n\n'
    'filename: /(.+)/\nadd_line: "+" /(.*)/ LF -> line\n\nchange_move: "*** Move to: " '
    'filename LF\nchange: (change_context | change_line)+ eof_line?\nchange_context: ("@@" | '
    '"@@ " /(.+)/) LF\nchange_line: ("+" | "-" | " ") /(.*)/ LF\neof_line: "*** End of File" '
    "LF\n\n%import common.LF\n"
)


def apply_patch_tool_spec() -> dict[str, Any]:
    """The Responses API tools entry, exactly as Codex 0.169.0 advertises it (key order too)."""
    return {
        "type": "custom",
        "name": "apply_patch",
        "description": (
            "The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, "
            "so do not wrap the patch in JSON."
        ),
        "format": {"type": "grammar", "syntax": "lark", "definition": _GRAMMAR},
    }


@dataclass(frozen=True)
class PatchToolResult:
    """What the model gets: plain text (errors, rejections) or a classic exec block."""

    text: str
    success: bool
    outcome: PatchOutcome | None = None


def render_classic_block(outcome: PatchOutcome, wall_seconds: str = "0") -> str:
    """The classic freeform block around an apply result (spec 02 §6.4; output untruncated)."""
    return (
        f"Exit code: {outcome.exit_code}\nWall time: {wall_seconds} seconds\n"
        f"Output:\n{outcome.output}"
    )


def prepare_apply_patch_tool(
    patch_text: str, cwd: str, fs: PatchFileSystem
) -> ApplyPatchAction | PatchToolResult:
    """Parse and verify the tool's input; a PatchToolResult means it stops here."""
    verified = verify_patch_text(patch_text, cwd, fs)
    if isinstance(verified, CorrectnessError):
        return PatchToolResult(text=verified.message, success=False)
    assert not isinstance(verified, NotApplyPatch)
    if verified.is_empty:
        return PatchToolResult(text=EMPTY_PATCH_REJECTION, success=False)
    return verified


def finish_apply_patch(
    action: ApplyPatchAction, fs: PatchFileSystem, wall_seconds: str = "0"
) -> PatchToolResult:
    """Apply an approved action and frame the result as the model sees it."""
    outcome = apply_patch_action(action, fs)
    return PatchToolResult(
        text=render_classic_block(outcome, wall_seconds), success=outcome.success, outcome=outcome
    )


def run_apply_patch_tool(patch_text: str, cwd: str, fs: PatchFileSystem) -> PatchToolResult:
    """Verify and apply in one step (for callers whose approval already allowed the write)."""
    prepared = prepare_apply_patch_tool(patch_text, cwd, fs)
    if isinstance(prepared, PatchToolResult):
        return prepared
    return finish_apply_patch(prepared, fs)
