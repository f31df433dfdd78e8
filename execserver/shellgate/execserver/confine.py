"""Confining mutating file operations to a sandbox's writable roots (symlinks, `..` resolved).

Reads are not confined: read-only and workspace-write let a process read everything.
Confinement only picks the root and the path beneath it; `shellgate.common.confined_fs`
does the race-free part (every mutation relative to a directory fd opened beneath the root).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from shellgate.common.errors import FileOperationError, PathNotAllowedError
from shellgate.common.sandbox import SandboxMode, SandboxSpec

RESOLVE_ATTEMPTS = 8


def _resolved(path: str) -> str:
    # realpath reads links one by one: a link swapped for a folder between its lstat and its
    # readlink fails (EINVAL); resolving again sees the new state. Bounded: a racer that
    # flips without pause can still make it fail, as an error with its errno.
    for _ in range(RESOLVE_ATTEMPTS - 1):
        with contextlib.suppress(OSError):
            return os.path.realpath(path)
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise FileOperationError(f"{exc.strerror} (os error {exc.errno})", exc.errno) from exc


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass(frozen=True)
class Confinement:
    """The resolved writable roots a confined file operation must stay within."""

    roots: tuple[str, ...]

    @classmethod
    def from_spec(cls, spec: SandboxSpec | None) -> Confinement | None:
        """None for no sandbox; read-only confines to nothing; workspace-write to its roots."""
        if spec is None or spec.mode is SandboxMode.NONE:
            return None
        if spec.mode is SandboxMode.READ_ONLY:
            return cls(())
        # Roots are resolved too: a root reached through a symlink still counts.
        return cls(tuple(_resolved(r) for r in spec.writable_roots if os.path.isabs(r)))

    def locate(self, path: str, field: str, *, follow_final: bool) -> tuple[str, str]:
        """The root holding path and path relative to it; PathNotAllowedError outside them.

        The path is resolved (`..`, symlinks) only to pick the root and the relative path;
        the operation then opens that relative path beneath the root's fd (confined_fs), so a
        symlink swapped in after this resolution cannot lead it out. With follow_final False
        the last component is kept as is (the operation acts on the entry itself). A path
        inside nested roots is located in the innermost root that strictly contains it, so
        that the entry's folder lies beneath the root; a root itself is ("root", "").
        """
        if follow_final:
            resolved = _resolved(path)
        else:
            folder, name = os.path.split(os.path.normpath(path))
            if name in ("", ".", ".."):
                resolved = _resolved(path)
            else:
                resolved = os.path.join(_resolved(folder), name)
        inside = [root for root in self.roots if _inside(resolved, root) and resolved != root]
        if inside:
            root = max(inside, key=len)
            return root, resolved[len(root):].lstrip("/")
        if resolved in self.roots:
            return resolved, ""
        raise PathNotAllowedError(f"{field} is outside the sandbox's writable roots")
