"""The apply_patch runtime: recognition, patch format, verification and application.

Public API for the service (spec 02 §6-§7, 06 §10):

* ``intercept_apply_patch(argv, cwd, fs) -> NotApplyPatch | ApplyPatchAction | CorrectnessError``
  — run on every handler argv before any projection. Pure given a read-only view of the
  environment's filesystem ``fs`` (it only reads target files). ``NotApplyPatch`` means the
  command runs normally (``shell_parse_error`` tells why, for diagnostics);
  ``CorrectnessError.message`` is the exact model-facing text
  (``apply_patch verification failed: …``); ``ApplyPatchAction`` is a verified patch
  (hunks with paths as written, absolute changes, effective ``cwd``, ``is_empty``,
  ``written_paths()`` for the sandbox/approval check keyed on ``{patch, cwd}``).
* ``apply_patch_action(action, fs) -> PatchOutcome`` — apply an approved action. Everything
  is verified and every new content computed before the first write; writes are staged in
  temp files beside their targets and renamed into place, and any failure rolls back, so a
  failed patch leaves no file changed. ``PatchOutcome`` has ``stdout`` (the
  ``Success. Updated the following files:`` summary), ``stderr`` (e.g.
  ``Failed to write file {path}``), ``success`` and ``exit_code``;
  ``render_classic_block(outcome)`` frames it as the classic exec block the model sees.
* ``run_apply_patch_tool(patch_text, cwd, fs) -> PatchToolResult`` — the ``apply_patch``
  custom tool in one step; ``prepare_apply_patch_tool`` / ``finish_apply_patch`` split it
  around the approval. ``apply_patch_tool_spec()`` is its tools entry.
* ``PatchFileSystem`` is the filesystem seam: ``LocalFileSystem`` for the host,
  ``MemoryFileSystem`` for tests and conformance, an exec-server client later.
"""

from shellgate.router.apply_patch.apply import PatchOutcome, apply_patch_action
from shellgate.router.apply_patch.fs import (
    FileStat,
    PatchFileSystem,
    PatchIoError,
    StagedWrite,
    write_atomic,
)
from shellgate.router.apply_patch.local_fs import LocalFileSystem
from shellgate.router.apply_patch.memory_fs import MemoryFileSystem
from shellgate.router.apply_patch.parser import (
    AddFile,
    DeleteFile,
    Hunk,
    ParsedPatch,
    PatchParseError,
    UpdateChunk,
    UpdateFile,
    parse_patch,
)
from shellgate.router.apply_patch.tool import (
    EMPTY_PATCH_REJECTION,
    PATCH_DECLINED,
    PatchToolResult,
    apply_patch_tool_spec,
    finish_apply_patch,
    prepare_apply_patch_tool,
    render_classic_block,
    run_apply_patch_tool,
)
from shellgate.router.apply_patch.verify import (
    AddChange,
    ApplyPatchAction,
    CorrectnessError,
    DeleteChange,
    FileChange,
    NotApplyPatch,
    UpdateChange,
    intercept_apply_patch,
    verify_patch_text,
)

__all__ = [
    "EMPTY_PATCH_REJECTION",
    "PATCH_DECLINED",
    "AddChange",
    "AddFile",
    "ApplyPatchAction",
    "CorrectnessError",
    "DeleteChange",
    "DeleteFile",
    "FileChange",
    "FileStat",
    "Hunk",
    "LocalFileSystem",
    "MemoryFileSystem",
    "NotApplyPatch",
    "ParsedPatch",
    "PatchFileSystem",
    "PatchIoError",
    "PatchOutcome",
    "PatchParseError",
    "PatchToolResult",
    "StagedWrite",
    "UpdateChange",
    "UpdateChunk",
    "UpdateFile",
    "apply_patch_action",
    "apply_patch_tool_spec",
    "finish_apply_patch",
    "intercept_apply_patch",
    "parse_patch",
    "prepare_apply_patch_tool",
    "render_classic_block",
    "run_apply_patch_tool",
    "verify_patch_text",
    "write_atomic",
]
