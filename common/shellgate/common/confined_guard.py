"""The protected names under a confined root, kept read-only as the sandbox keeps them.

A sandboxed command cannot write under `<root>/.git` (or `.agents`, `.codex`, `.aws`, or the
folder a `.git` pointer names): the sandbox binds each read-only. A confined file operation
(`confined_fs.ConfinedRoot`, a sandboxed file RPC, an auto-approved patch) keeps the same
rule, by identity rather than by name, so a symlink or a rename cannot lead it in:

* an operation whose first component beneath the root is a protected name is refused,
  whether that name exists or not;
* the directories it acts in, and their ancestors up to the root, and the entry it acts on
  are compared (device, inode) with each protected folder that exists.

Refusals are EROFS, "Read-only file system", what the command would have met. No race
opens a way in: the directory fd an operation uses is the one checked, and a writer in the
sandbox can neither move a folder into a protected one nor move a protected one (it is a
read-only mount point there).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat

from shellgate.common.protected_names import GIT, POINTER_MAX_CHARS, PROTECTED_NAMES, gitdir_target

Identity = tuple[int, int]
_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
# Deeper than any real tree: a walk up that never meets the root is refused.
_MAX_DEPTH = 4096


class ProtectedPathError(OSError):
    """The operation would change a protected name under its root (EROFS)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EROFS, os.strerror(errno.EROFS), path)


def _identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino)


def _pointer_target(root_fd: int, root_path: str) -> Identity | None:
    """The folder a `.git` pointer file under the root names, if any."""
    try:
        fd = os.open(GIT, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=root_fd)
    except OSError:
        return None
    try:
        text = os.read(fd, POINTER_MAX_CHARS).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    target = gitdir_target(os.path.join(root_path, GIT), text)
    if target is None:
        return None
    with contextlib.suppress(OSError):
        return _identity(os.stat(target))
    return None


def protected_identities(root_fd: int, root_path: str) -> frozenset[Identity]:
    """The existing protected folders under an open root (symlinked ones where they land)."""
    found: set[Identity] = set()
    for name in PROTECTED_NAMES:
        try:
            st = os.stat(name, dir_fd=root_fd)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            found.add(_identity(st))
        elif name == GIT:
            target = _pointer_target(root_fd, root_path)
            if target is not None:
                found.add(target)
    return frozenset(found)


def check_first_component(rel: str) -> None:
    """Refuse a path beneath the root whose first component is a protected name."""
    if posixpath.normpath(rel).split("/", 1)[0] in PROTECTED_NAMES:
        raise ProtectedPathError(rel)


def check_place(
    dir_fd: int, name: str, root_fd: int, protected: frozenset[Identity], rel: str
) -> None:
    """Refuse when the entry `name` of dir_fd, dir_fd itself or an ancestor is protected."""
    if not protected:
        return
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        if _identity(os.stat(name, dir_fd=dir_fd, follow_symlinks=False)) in protected:
            raise ProtectedPathError(rel)
    root = _identity(os.fstat(root_fd))
    current = os.dup(dir_fd)
    try:
        for _ in range(_MAX_DEPTH):
            here = _identity(os.fstat(current))
            if here in protected:
                raise ProtectedPathError(rel)
            if here == root:
                return
            above = os.open("..", _DIR_FLAGS, dir_fd=current)
            os.close(current)
            current = above
            if _identity(os.fstat(current)) == here:
                break  # `/`: the root was never met
    finally:
        os.close(current)
    raise ProtectedPathError(rel)


def check_dir(dir_fd: int, protected: frozenset[Identity], rel: str) -> None:
    """Refuse a directory (met while emptying a tree) that is a protected folder."""
    if protected and _identity(os.fstat(dir_fd)) in protected:
        raise ProtectedPathError(rel)
