"""The names a sandbox keeps read-only under every writable root, and a `.git` pointer's target.

Pure (no I/O): the sandbox (`sandbox.py`), the confined file operations (`confined_fs.py`)
and the router's patch safety check all read the same rule from here.
"""

from __future__ import annotations

import posixpath

# Names under a writable root that stay read-only, as Codex 0.169 keeps them (observed:
# `codex sandbox` under workspace-write binds each existing one read-only): repository
# metadata (hooks run as the user later), agent settings and cloud credentials.
PROTECTED_NAMES = (".git", ".agents", ".codex", ".aws")
GIT = ".git"
# A pointer file's first line is short; a longer one is no pointer.
POINTER_MAX_CHARS = 4096


def gitdir_target(pointer: str, text: str) -> str | None:
    """The folder a `.git` file points to (`gitdir: PATH`, a worktree's or submodule's).

    `text` is the file's contents; a relative target is taken from the pointer's folder.
    """
    first = text[:POINTER_MAX_CHARS].split("\n", 1)[0].strip()
    if not first.startswith("gitdir:"):
        return None
    target = first.removeprefix("gitdir:").strip()
    if not target:
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(pointer), target))
