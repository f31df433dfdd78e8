"""File operations the apply_patch runtime needs on the daemon's own filesystem.

Under a sandbox only the mutating operations (write, remove, rename, mkdir) are confined to
the writable roots; reads and stats see what a sandboxed process sees: everything. A confined
operation acts through `shellgate.common.confined_fs`: every step relative to a directory fd
opened beneath its root, so a folder swapped for a symlink mid-call cannot lead it out.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from shellgate.common.confined_fs import ConfinedRoot, PathEscapeError, current_umask, write_at
from shellgate.common.errors import (
    FileNotFoundExecError,
    FileOperationError,
    InvalidArgumentError,
    LimitExceededError,
    PathNotAllowedError,
    ServiceError,
)
from shellgate.execserver.confine import Confinement

TEMP_PREFIX = ".shellgate-"


@dataclass(frozen=True)
class FileStat:
    """Metadata of a path (exists=False when missing)."""

    exists: bool
    kind: str = ""  # file | directory | symlink | other
    size: int = 0
    mode: int = 0
    modified_ms: int = 0
    # (st_dev, st_ino) of what the path names (common/process/cwd_pin's CwdIdentity).
    identity: tuple[int, int] | None = None


def _os_error(exc: OSError) -> ServiceError:
    # The message form the contract names: `{strerror} (os error {errno})`.
    if exc.errno is None:
        return FileOperationError(str(exc))
    text = f"{exc.strerror} (os error {exc.errno})"
    if exc.errno == errno.ENOENT:
        return FileNotFoundExecError(text, exc.errno)
    return FileOperationError(text, exc.errno)


def domain_error(exc: OSError) -> ServiceError:
    """The domain error for an OS error (`{strerror} (os error {errno})`)."""
    return _os_error(exc)


@contextlib.contextmanager
def _confined(
    confine: Confinement, path: str, field: str, *, follow_final: bool = False
) -> Iterator[tuple[ConfinedRoot, str]]:
    """The open root holding path and path beneath it; OS errors become domain errors.

    Every failure is a domain error with its errno (never INTERNAL): a path leading out of
    the root, even only through a symlink swapped in mid-call, is PathNotAllowedError.
    """
    root, rel = confine.locate(path, field, follow_final=follow_final)
    try:
        with ConfinedRoot(root) as opened:
            yield opened, rel
    except PathEscapeError:
        raise PathNotAllowedError(f"{field} is outside the sandbox's writable roots") from None
    except OSError as exc:
        raise _os_error(exc) from exc


def _absolute(path: str, field: str) -> str:
    if not path or not os.path.isabs(path) or "\0" in path:
        raise InvalidArgumentError(f"{field} must be an absolute path")
    return path


def read_file(path: str, max_bytes: int) -> bytes:
    """Read a whole file, refusing files over max_bytes.

    Never confined: a sandboxed process may read the whole filesystem (read-only and
    workspace-write restrict writes only), and file reads follow the same rule.
    """
    _absolute(path, "path")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise _os_error(exc) from exc
    if len(data) > max_bytes:
        raise LimitExceededError(f"file is larger than {max_bytes} bytes", limit="max_file_bytes")
    return data


def _default_mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def write_file(
    path: str,
    data: bytes,
    mode: int | None,
    create_parents: bool,
    confine: Confinement | None = None,
) -> None:
    """Write atomically: a temp file in the same folder, fsync, then rename over path."""
    _absolute(path, "path")
    if confine is not None:
        _write_confined(path, data, mode, create_parents, confine)
        return
    folder = os.path.dirname(path)
    try:
        if create_parents:
            os.makedirs(folder, exist_ok=True)
        if mode is None:
            mode = _default_mode(path)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".shellgate-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with_suppressed_unlink(tmp)
            raise
    except OSError as exc:
        raise _os_error(exc) from exc


def _write_confined(
    path: str, data: bytes, mode: int | None, create_parents: bool, confine: Confinement
) -> None:
    # O_NOFOLLOW on the temp file and a rename that replaces (never follows) a final
    # symlink, in a folder opened beneath the root: nothing can redirect the write.
    with _confined(confine, path, "path") as (root, rel):
        if create_parents:
            root.make_dir(os.path.dirname(rel), parents=True)
        with root.parent(rel) as (dir_fd, name):
            write_at(dir_fd, name, data, mode, TEMP_PREFIX)


def with_suppressed_unlink(path: str) -> None:
    """Remove a leftover temp file, ignoring errors."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def remove(
    path: str, recursive: bool, missing_ok: bool, confine: Confinement | None = None
) -> None:
    """Remove a file, an empty directory, or (recursive) a whole tree."""
    _absolute(path, "path")
    if confine is not None:
        _remove_confined(path, recursive, missing_ok, confine)
        return
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            if recursive:
                shutil.rmtree(path)
            else:
                os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise FileNotFoundExecError(
                f"{os.strerror(errno.ENOENT)} (os error {errno.ENOENT})", errno.ENOENT
            ) from None
    except OSError as exc:
        raise _os_error(exc) from exc


def _remove_confined(path: str, recursive: bool, missing_ok: bool, confine: Confinement) -> None:
    # The entry itself goes (a symlink is removed, not its target); a tree is emptied
    # through directory fds opened without following links.
    try:
        with _confined(confine, path, "path") as (root, rel):
            root.remove(rel, recursive=recursive)
    except FileNotFoundExecError:
        if not missing_ok:
            raise


def rename(
    from_path: str, to_path: str, create_parents: bool, confine: Confinement | None = None
) -> None:
    """Rename (replacing an existing destination file)."""
    _absolute(from_path, "from_path")
    _absolute(to_path, "to_path")
    if confine is not None:
        # Each side is opened in its own context, so a refusal names the right field.
        with (
            _confined(confine, from_path, "from_path") as (src_root, src),
            src_root.parent(src) as (src_fd, src_name),
            _confined(confine, to_path, "to_path") as (dst_root, dst),
        ):
            if create_parents:
                dst_root.make_dir(os.path.dirname(dst), parents=True)
            with dst_root.parent(dst) as (dst_fd, dst_name):
                os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    try:
        if create_parents:
            os.makedirs(os.path.dirname(to_path), exist_ok=True)
        os.replace(from_path, to_path)
    except OSError as exc:
        raise _os_error(exc) from exc


def stat_path(path: str, follow_symlinks: bool) -> FileStat:
    """Metadata of path; a missing path is exists=False, not an error (never confined)."""
    _absolute(path, "path")
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        return FileStat(exists=False)
    except OSError as exc:
        raise _os_error(exc) from exc
    if stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "directory"
    elif stat.S_ISLNK(st.st_mode):
        kind = "symlink"
    else:
        kind = "other"
    return FileStat(
        True, kind, st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns // 10**6,
        (st.st_dev, st.st_ino),
    )  # fmt: skip


def make_directory(path: str, parents: bool, confine: Confinement | None = None) -> None:
    """mkdir, or `mkdir -p` with parents."""
    _absolute(path, "path")
    if confine is not None:
        with _confined(confine, path, "path", follow_final=True) as (root, rel):
            root.make_dir(rel, parents=parents)
        return
    try:
        if parents:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except OSError as exc:
        raise _os_error(exc) from exc
