"""Planning a verified patch: the final state of every touched path, before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field

from shellgate.router.apply_patch.fs import ENOENT, PatchFileSystem, PatchIoError, os_error
from shellgate.router.apply_patch.parser import AddFile, DeleteFile, UpdateFile
from shellgate.router.apply_patch.update import ComputeError, derive_new_contents
from shellgate.router.apply_patch.verify import ApplyPatchAction, UpdateChange


class PlanError(Exception):
    """The patch cannot be applied; `str()` is the model-facing text."""


@dataclass(frozen=True)
class Original:
    """What was at a path before the patch: text, nothing (`exists` false), or unreadable."""

    exists: bool
    text: str | None


@dataclass
class PatchPlan:
    """Final contents per absolute path (None = removed), in first-touched order."""

    final: dict[str, str | None] = field(default_factory=dict)
    originals: dict[str, Original] = field(default_factory=dict)
    display: dict[str, str] = field(default_factory=dict)
    remove_kind: dict[str, str] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """`Success. Updated the following files:` with A, M, D lines (paths as written)."""
        lines = ["Success. Updated the following files:"]
        lines += [f"A {p}" for p in self.added]
        lines += [f"M {p}" for p in self.modified]
        lines += [f"D {p}" for p in self.deleted]
        return "\n".join(lines) + "\n"


class _Overlay:
    """The filesystem as earlier hunks of this patch left it (later hunks see their effect)."""

    def __init__(self, fs: PatchFileSystem, plan: PatchPlan) -> None:
        self.fs = fs
        self.plan = plan

    def remember(self, path: str) -> None:
        if path in self.plan.originals:
            return
        if self.fs.stat(path) is None:
            self.plan.originals[path] = Original(False, None)
            return
        try:
            self.plan.originals[path] = Original(True, self.fs.read_text(path))
        except PatchIoError:
            # Exists but is not text (or not readable): it cannot be restored on rollback.
            self.plan.originals[path] = Original(True, None)

    def read(self, path: str) -> str:
        if path in self.plan.final:
            content = self.plan.final[path]
            if content is None:
                raise os_error(ENOENT)
            return content
        return self.fs.read_text(path)

    def exists(self, path: str) -> bool:
        if path in self.plan.final:
            return self.plan.final[path] is not None
        return self.fs.stat(path) is not None

    def set(self, path: str, display: str, content: str | None) -> None:
        self.remember(path)
        self.plan.final[path] = content
        self.plan.display[path] = display


def plan_patch(action: ApplyPatchAction, fs: PatchFileSystem) -> PatchPlan:
    """Simulate the hunks in order on an overlay; raise PlanError if one cannot apply."""
    plan = PatchPlan()
    view = _Overlay(fs, plan)
    for hunk, change in zip(action.hunks, action.changes, strict=True):
        if isinstance(hunk, AddFile):
            view.set(change.path, hunk.path, hunk.contents)
            plan.added.append(hunk.path)
        elif isinstance(hunk, DeleteFile):
            if not view.exists(change.path):
                raise PlanError(f"Failed to delete file {hunk.path}")
            view.set(change.path, hunk.path, None)
            plan.remove_kind[change.path] = "delete"
            plan.deleted.append(hunk.path)
        else:
            assert isinstance(change, UpdateChange)
            _plan_update(hunk, change, view, plan)
    return plan


def _plan_update(hunk: UpdateFile, change: UpdateChange, view: _Overlay, plan: PatchPlan) -> None:
    if change.path in plan.final:
        # An earlier hunk touched this file: apply the chunks to that result instead.
        try:
            original = view.read(change.path)
        except PatchIoError as exc:
            raise PlanError(f"Failed to read file to update {change.path}: {exc.message}") from None
        try:
            new_content = derive_new_contents(original, hunk.chunks, change.path)
        except ComputeError as exc:
            raise PlanError(str(exc)) from None
    else:
        new_content = change.new_content
    if change.move_path is None or change.move_path == change.path:
        # A move onto itself is an update (Codex would write, then delete the file).
        view.set(change.path, hunk.move_path or hunk.path, new_content)
        plan.modified.append(hunk.move_path or hunk.path)
        return
    assert hunk.move_path is not None
    view.set(change.move_path, hunk.move_path, new_content)
    view.set(change.path, hunk.path, None)
    plan.remove_kind[change.path] = "move"
    plan.modified.append(hunk.move_path)
