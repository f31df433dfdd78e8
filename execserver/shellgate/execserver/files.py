"""File operations the apply_patch runtime needs on the daemon's own filesystem.

Under a sandbox only the mutating operations (write, remove, rename, mkdir) are confined to
the writable roots; reads and stats see what a sandboxed process sees: everything.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass

from shellgate.common.errors import (
    FileNotFoundExecError,
    FileOperationError,
    InvalidArgumentError,
    LimitExceededError,
)
from shellgate.execserver.confine import Confinement


@dataclass(frozen=True)
class FileStat:
    """Metadata of a path (exists=False when missing)."""

    exists: bool
    kind: str = ""  # file | directory | symlink | other
    size: int = 0
    mode: int = 0
    modified_ms: int = 0


def _os_error(exc: OSError) -> Exception:
    # The message form the contract names: `{strerror} (os error {errno})`.
    text = f"{exc.strerror} (os error {exc.errno})"
    if exc.errno == errno.ENOENT:
        return FileNotFoundExecError(text, exc.errno)
    return FileOperationError(text, exc.errno)


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
        raise LimitExceededError(f"file is larger than {max_bytes} bytes")
    return data


def _default_mode(path: str, dir_fd: int | None = None) -> int:
    try:
        return stat.S_IMODE(os.stat(path, dir_fd=dir_fd).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


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
    # Everything happens relative to a folder handle verified to lie within a root, with
    # O_NOFOLLOW on the temp file and a rename that replaces (never follows) a final
    # symlink: swapping a folder for a symlink after the check cannot redirect the write.
    resolved = confine.resolve(path, "path", follow_final=False)
    folder, name = os.path.split(resolved)
    try:
        if create_parents:
            os.makedirs(folder, exist_ok=True)
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _os_error(exc) from exc
    try:
        confine.check_dir_fd(dir_fd, "path")
        if mode is None:
            mode = _default_mode(name, dir_fd)
        tmp = f".shellgate-{os.urandom(6).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
                os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
        except OSError as exc:
            raise _os_error(exc) from exc
    finally:
        os.close(dir_fd)


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
        # The entry itself goes (a symlink is removed, not its target); rmtree never
        # follows symlinks below it.
        path = confine.resolve(path, "path", follow_final=False)
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


def rename(
    from_path: str, to_path: str, create_parents: bool, confine: Confinement | None = None
) -> None:
    """Rename (replacing an existing destination file)."""
    _absolute(from_path, "from_path")
    _absolute(to_path, "to_path")
    if confine is not None:
        from_path = confine.resolve(from_path, "from_path", follow_final=False)
        to_path = confine.resolve(to_path, "to_path", follow_final=False)
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
    return FileStat(True, kind, st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns // 10**6)


def make_directory(path: str, parents: bool, confine: Confinement | None = None) -> None:
    """mkdir, or `mkdir -p` with parents."""
    _absolute(path, "path")
    if confine is not None:
        path = confine.resolve(path, "path", follow_final=True)
    try:
        if parents:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except OSError as exc:
        raise _os_error(exc) from exc
