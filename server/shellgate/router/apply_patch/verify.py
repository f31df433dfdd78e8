"""Verification of a recognised patch against the target files, and `intercept_apply_patch`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.router.apply_patch.fs import PatchFileSystem, PatchIoError
from shellgate.router.apply_patch.invocation import (
    InvocationParseError,
    NotRecognised,
    is_implicit_invocation,
    recognise,
)
from shellgate.router.apply_patch.parser import (
    AddFile,
    DeleteFile,
    Hunk,
    ParsedPatch,
    PatchParseError,
    UpdateFile,
    parse_patch,
)
from shellgate.router.apply_patch.paths import cwd_path, resolve
from shellgate.router.apply_patch.update import ComputeError, derive_new_contents

VERIFICATION_FAILED = "apply_patch verification failed: "
IMPLICIT_INVOCATION = (
    'patch detected without explicit call to apply_patch. Rerun as ["apply_patch", "<patch>"]'
)


@dataclass(frozen=True)
class NotApplyPatch:
    """Not intercepted: the command runs as a normal shell command."""

    shell_parse_error: bool = False


@dataclass(frozen=True)
class CorrectnessError:
    """An apply_patch call that cannot be carried out; `error` is the cause's Display text."""

    error: str

    @property
    def message(self) -> str:
        """The exact text the model receives."""
        return VERIFICATION_FAILED + self.error


@dataclass(frozen=True)
class AddChange:
    """Create or overwrite `path`."""

    path: str
    content: str


@dataclass(frozen=True)
class DeleteChange:
    """Remove `path`, whose contents were read during verification."""

    path: str
    content: str


@dataclass(frozen=True)
class UpdateChange:
    """Rewrite `path` (or move it to `move_path`) with `new_content`."""

    path: str
    move_path: str | None
    old_content: str
    new_content: str


FileChange = AddChange | DeleteChange | UpdateChange


@dataclass(frozen=True)
class ApplyPatchAction:
    """A verified patch: hunks (paths as written), their absolute changes, effective cwd."""

    patch: str
    cwd: str
    workdir: str | None
    hunks: tuple[Hunk, ...]
    changes: tuple[FileChange, ...]

    @property
    def is_empty(self) -> bool:
        """True for a patch with no hunks (rejected as `patch rejected: empty patch`)."""
        return not self.hunks

    def written_paths(self) -> tuple[str, ...]:
        """Every absolute path the patch creates, changes or removes (for sandbox checks)."""
        out: list[str] = []
        for change in self.changes:
            out.append(change.path)
            if isinstance(change, UpdateChange) and change.move_path is not None:
                out.append(change.move_path)
        return tuple(dict.fromkeys(out))


InterceptResult = NotApplyPatch | ApplyPatchAction | CorrectnessError


def intercept_apply_patch(argv: Sequence[str], cwd: str, fs: PatchFileSystem) -> InterceptResult:
    """Spec 02 §6.1: classify a handler argv; reads (never writes) target files through `fs`."""
    if is_implicit_invocation(argv, cwd):
        return CorrectnessError(IMPLICIT_INVOCATION)
    found = recognise(argv, cwd)
    if isinstance(found, NotRecognised):
        return NotApplyPatch(shell_parse_error=found.shell_parse_error)
    if isinstance(found, InvocationParseError):
        return CorrectnessError(found.error.text)
    return verify_patch(found.parsed, cwd, found.workdir, fs)


def verify_patch_text(patch_text: str, cwd: str, fs: PatchFileSystem) -> InterceptResult:
    """Parse and verify a patch given as text (the `apply_patch` custom tool's input)."""
    try:
        parsed = parse_patch(patch_text)
    except PatchParseError as exc:
        return CorrectnessError(exc.text)
    return verify_patch(parsed, cwd, None, fs)


def verify_patch(
    parsed: ParsedPatch, cwd: str, workdir: str | None, fs: PatchFileSystem
) -> ApplyPatchAction | CorrectnessError:
    """Spec 02 §6.3: resolve every hunk and check it against the files, before any write."""
    base = cwd_path(cwd)
    effective = resolve(base, workdir) if workdir is not None else resolve(base, ".")
    changes: list[FileChange] = []
    for hunk in parsed.hunks:
        path = resolve(effective, hunk.path)
        if isinstance(hunk, AddFile):
            changes.append(AddChange(path, hunk.contents))
        elif isinstance(hunk, DeleteFile):
            try:
                content = fs.read_text(path)
            except PatchIoError as exc:
                return CorrectnessError(f"Failed to read {path}: {exc.message}")
            changes.append(DeleteChange(path, content))
        else:
            update = _verify_update(hunk, path, effective, fs)
            if isinstance(update, CorrectnessError):
                return update
            changes.append(update)
    return ApplyPatchAction(
        patch=parsed.patch,
        cwd=effective,
        workdir=workdir,
        hunks=parsed.hunks,
        changes=tuple(changes),
    )


def _verify_update(
    hunk: UpdateFile, path: str, effective: str, fs: PatchFileSystem
) -> UpdateChange | CorrectnessError:
    try:
        original = fs.read_text(path)
    except PatchIoError as exc:
        return CorrectnessError(f"Failed to read file to update {path}: {exc.message}")
    try:
        new_content = derive_new_contents(original, hunk.chunks, path)
    except ComputeError as exc:
        return CorrectnessError(str(exc))
    move = resolve(effective, hunk.move_path) if hunk.move_path is not None else None
    return UpdateChange(path, move, original, new_content)
