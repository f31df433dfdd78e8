"""Confining mutating file operations to a sandbox's writable roots (symlinks, `..` resolved).

Reads are not confined: read-only and workspace-write let a process read everything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from shellgate.common.errors import PathNotAllowedError
from shellgate.common.sandbox import SandboxMode, SandboxSpec


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
        return cls(tuple(os.path.realpath(r) for r in spec.writable_roots if os.path.isabs(r)))

    def allows(self, resolved: str) -> bool:
        """Whether an already resolved absolute path lies within a root."""
        return any(_inside(resolved, root) for root in self.roots)

    def resolve(self, path: str, field: str, *, follow_final: bool) -> str:
        """The path with `..` and symlinks resolved; PathNotAllowedError outside the roots.

        With follow_final False the last component is kept as is (the operation acts on the
        entry itself, e.g. removing a symlink), and only its folder is resolved.
        """
        if follow_final:
            resolved = os.path.realpath(path)
        else:
            folder, name = os.path.split(os.path.normpath(path))
            if name in ("", ".", ".."):
                resolved = os.path.realpath(path)
            else:
                resolved = os.path.join(os.path.realpath(folder), name)
        if not self.allows(resolved):
            raise PathNotAllowedError(f"{field} is outside the sandbox's writable roots")
        return resolved

    def check_dir_fd(self, fd: int, field: str) -> None:
        """Refuse when an opened directory is not (any longer) within a root."""
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError as exc:
            raise PathNotAllowedError(f"{field} cannot be verified: {exc.strerror}") from exc
        if not self.allows(where):
            raise PathNotAllowedError(f"{field} is outside the sandbox's writable roots")
