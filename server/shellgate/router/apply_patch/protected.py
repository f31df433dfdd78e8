"""Where under the writable roots a sandboxed command could not write: the protected names.

The sandbox keeps `.git`, `.agents`, `.codex` and `.aws` read-only under every writable
root, and the folder a `.git` pointer file names (shellgate.common.protected_names). A patch
writes only what a sandboxed command could, so a patch path inside one of these is treated
like a path outside the roots: asked for, or rejected under `never`, as Codex's patch
safety check does for its read-only subpaths.

A name is protected here whether it exists or not: a patch that creates `.git/...` (or a
`.git` file, a pointer git would follow) is asked for even in a folder that is no
repository yet, where the sandbox would let a command write it. Reads go through the
filesystem seam only (`stat`, `read_text`, `resolve`), so this stays a pure stage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from shellgate.common.protected_names import GIT, PROTECTED_NAMES, gitdir_target
from shellgate.router.apply_patch.fs import PatchFileSystem, PatchIoError
from shellgate.router.apply_patch.paths import is_windows_path, is_within

__all__ = ["protected_areas", "touches_protected"]


def _pointer_target(fs: PatchFileSystem, pointer: str) -> str | None:
    """The gitdir a `.git` file points to, or None (not a file, unreadable, no pointer)."""
    try:
        found = fs.stat(pointer)
        if found is None or not found.is_file:
            return None
        return gitdir_target(pointer, fs.read_text(pointer))
    except PatchIoError:
        return None


def protected_areas(roots: Sequence[str], fs: PatchFileSystem) -> tuple[str, ...]:
    """Every path under the roots a sandboxed command could not write (textual and resolved)."""
    areas: list[str] = []
    for root in roots:
        if is_windows_path(root):
            continue  # the sandbox's rule is a Linux one
        for base in dict.fromkeys((root, fs.resolve(root))):
            for name in PROTECTED_NAMES:
                place = f"{base.rstrip('/')}/{name}"
                # An existing name may be a symlink: the sandbox binds where it lands.
                areas += [place, fs.resolve(place)]
            target = _pointer_target(fs, f"{base.rstrip('/')}/{GIT}")
            if target is not None:
                areas += [target, fs.resolve(target)]
    return tuple(dict.fromkeys(areas))


def touches_protected(
    paths: Iterable[str], areas: Sequence[str], resolve: Callable[[str], str] = str
) -> bool:
    """Whether a path (as written, or where a write to it lands) is in a protected area."""
    return any(
        is_within(place, area)
        for path in paths
        for place in dict.fromkeys((path, resolve(path)))
        for area in areas
    )
