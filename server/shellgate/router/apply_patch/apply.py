"""Applying a verified patch all-or-nothing: stage every write, then commit, else roll back."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shellgate.router.apply_patch.fs import (
    PatchFileSystem,
    PatchIoError,
    StagedWrite,
    write_atomic,
)
from shellgate.router.apply_patch.paths import parent
from shellgate.router.apply_patch.plan import PatchPlan, PlanError, plan_patch
from shellgate.router.apply_patch.verify import ApplyPatchAction

NO_FILES_MODIFIED = "No files were modified."


@dataclass(frozen=True)
class PatchOutcome:
    """The runtime's result as a process would report it: stdout, stderr, success."""

    success: bool
    stdout: str
    stderr: str

    @property
    def exit_code(self) -> int:
        """0 on success, 1 on failure."""
        return 0 if self.success else 1

    @property
    def output(self) -> str:
        """stdout followed by stderr (the aggregated output the model sees)."""
        return self.stdout + self.stderr


def _failure(message: str) -> PatchOutcome:
    return PatchOutcome(success=False, stdout="", stderr=message + "\n")


def apply_patch_action(action: ApplyPatchAction, fs: PatchFileSystem) -> PatchOutcome:
    """Apply a verified patch; on any failure no file is left changed (best effort undo)."""
    if action.is_empty:
        return _failure(NO_FILES_MODIFIED)
    try:
        plan = plan_patch(action, fs)
    except PlanError as exc:
        return _failure(str(exc))
    txn = _Transaction(fs, plan)
    try:
        txn.run()
    except PlanError as exc:
        txn.rollback()
        return _failure(str(exc))
    return PatchOutcome(success=True, stdout=plan.summary(), stderr="")


class _Transaction:
    """Directories, then staged temp files, then renames and removals; undo in reverse."""

    def __init__(self, fs: PatchFileSystem, plan: PatchPlan) -> None:
        self.fs = fs
        self.plan = plan
        self.created_dirs: list[str] = []
        self.staged: list[StagedWrite] = []
        self.committed: list[str] = []
        self.removed: list[str] = []

    def run(self) -> None:
        writes = [(p, c) for p, c in self.plan.final.items() if c is not None]
        removals = [
            p for p, c in self.plan.final.items() if c is None and self.plan.originals[p].exists
        ]
        for path, _ in writes:
            self._make_parent(path)
        # Nothing visible has changed until every new file is fully on disk.
        for path, content in writes:
            try:
                self.staged.append(self.fs.stage_write(path, content))
            except PatchIoError:
                raise PlanError(f"Failed to write file {self.plan.display[path]}") from None
        for (path, _), staged in zip(writes, list(self.staged), strict=True):
            try:
                self.fs.rename(staged.temp_path, staged.target)
            except PatchIoError:
                raise PlanError(f"Failed to write file {self.plan.display[path]}") from None
            self.staged.remove(staged)
            self.committed.append(path)
        for path in removals:
            try:
                self.fs.remove(path)
            except PatchIoError:
                kind = self.plan.remove_kind.get(path)
                verb = "Failed to remove original" if kind == "move" else "Failed to delete file"
                raise PlanError(f"{verb} {self.plan.display[path]}") from None
            self.removed.append(path)

    def _make_parent(self, path: str) -> None:
        directory = parent(path)
        info = self.fs.stat(directory) if directory else None
        if not directory or (info is not None and info.is_dir):
            return
        missing: list[str] = []
        probe = directory
        while probe and self.fs.stat(probe) is None:
            missing.append(probe)
            up = parent(probe)
            if up == probe:
                break
            probe = up
        try:
            self.fs.make_dirs(directory)
        except PatchIoError:
            raise PlanError(
                f"Failed to create parent directories for {self.plan.display[path]}"
            ) from None
        # Deepest first, so rollback can remove them in this order.
        self.created_dirs.extend(missing)

    def rollback(self) -> None:
        """Undo what was done; every step is best effort (the first error is reported)."""
        fs = self.fs
        for staged in self.staged:
            _quietly(fs.remove, staged.temp_path)
        for path in [*self.removed, *self.committed]:
            original = self.plan.originals[path]
            if original.exists and original.text is not None:
                _quietly(write_atomic, fs, path, original.text)
            elif not original.exists:
                _quietly(fs.remove, path)
        for directory in self.created_dirs:
            _quietly(fs.remove_dir, directory)


def _quietly(step: Callable[..., None], *args: Any) -> None:
    # Rollback must go on past a failing step: restoring the other files matters more.
    with contextlib.suppress(PatchIoError):
        step(*args)
