"""The local PatchFileSystem: UTF-8 reads, durable atomic writes (temp + fsync + os.replace).

`confined(roots)` gives the view an auto-approved workspace-write patch is applied through:
every mutation happens beneath an opened root directory fd (shellgate.common.confined_fs,
openat2 RESOLVE_BENEATH), so a symlink planted or swapped in, even mid-patch, can never make
the router write outside the writable roots; such a write fails instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
import tempfile
from collections.abc import Callable
from typing import TypeVar

from shellgate.common.confined_fs import ConfinedRoot, PathEscapeError, current_umask
from shellgate.router.apply_patch.fs import (
    INVALID_UTF8,
    FileStat,
    PatchIoError,
    StagedWrite,
    os_error,
)

T = TypeVar("T")


def _io_error(exc: OSError) -> PatchIoError:
    if exc.errno is None:
        return PatchIoError(str(exc))
    return os_error(exc.errno, exc.strerror)


class LocalFileSystem:
    """The host's filesystem; paths are absolute host paths."""

    def resolve(self, path: str) -> str:
        """Where a write to `path` lands: symlinks (a final one too) followed."""
        return os.path.realpath(path)

    def confined(self, roots: tuple[str, ...]) -> ConfinedLocalFileSystem:
        """A view whose mutations stay beneath `roots` (race-free)."""
        return ConfinedLocalFileSystem(roots)

    def read_text(self, path: str) -> str:
        """Read bytes and decode strictly as UTF-8 (no newline translation)."""
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise _io_error(exc) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise PatchIoError(INVALID_UTF8) from None

    def stat(self, path: str) -> FileStat | None:
        """Follows symlinks; None when the path cannot be reached."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        return FileStat(
            is_file=stat_mod.S_ISREG(info.st_mode), is_dir=stat_mod.S_ISDIR(info.st_mode)
        )

    def make_dirs(self, path: str) -> None:
        """`mkdir -p`."""
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise _io_error(exc) from None

    def stage_write(self, path: str, content: str) -> StagedWrite:
        """Temp file in the target's directory with the target's mode, written and fsynced."""
        # Writing through a symlink updates the file it points to, as a plain write would.
        target = os.path.realpath(path) if os.path.islink(path) else path
        directory = os.path.dirname(target) or "."
        try:
            mode = stat_mod.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode = 0o666 & ~current_umask()
        try:
            fd, temp = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".apply_patch", dir=directory
            )
        except OSError as exc:
            raise _io_error(exc) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(content.encode("utf-8", "surrogatepass"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise _io_error(exc) from None
        return StagedWrite(temp_path=temp, target=target)

    def rename(self, src: str, dst: str) -> None:
        """`os.replace`, then fsync the directory so the rename survives a crash."""
        try:
            os.replace(src, dst)
        except OSError as exc:
            raise _io_error(exc) from None
        _fsync_dir(os.path.dirname(dst) or ".")

    def remove(self, path: str) -> None:
        """Unlink a file."""
        try:
            os.unlink(path)
        except OSError as exc:
            raise _io_error(exc) from None

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory."""
        try:
            os.rmdir(path)
        except OSError as exc:
            raise _io_error(exc) from None


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ConfinedLocalFileSystem(LocalFileSystem):
    """LocalFileSystem whose mutations happen beneath the writable roots' directory fds."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self._roots = tuple(os.path.realpath(r) for r in roots if os.path.isabs(r))

    def _locate(self, path: str, *, follow_final: bool) -> tuple[str, str]:
        # Resolution here only picks the root and the relative path; the operation then
        # opens that path beneath the root's fd, so a later swap cannot lead it out.
        folder, name = os.path.split(os.path.normpath(path))
        resolved = (
            os.path.realpath(path)
            if follow_final or name in ("", ".", "..")
            else os.path.join(os.path.realpath(folder), name)
        )
        inside = [r for r in self._roots if resolved.startswith(r.rstrip("/") + "/")]
        if not inside:
            raise os_error(errno.EPERM)
        root = max(inside, key=len)
        return root, resolved[len(root) :].lstrip("/")

    def _run(self, path: str, follow_final: bool, action: Callable[[ConfinedRoot, str], T]) -> T:
        root, rel = self._locate(path, follow_final=follow_final)
        try:
            with ConfinedRoot(root) as confined:
                return action(confined, rel)
        except PathEscapeError:
            raise os_error(errno.EPERM) from None
        except OSError as exc:
            raise _io_error(exc) from None

    def make_dirs(self, path: str) -> None:
        """`mkdir -p`, one component at a time beneath the root."""
        self._run(path, True, lambda r, rel: r.make_dir(rel, parents=True))

    def stage_write(self, path: str, content: str) -> StagedWrite:
        """Temp file beside the target (through a final symlink only when it stays inside)."""
        root, rel = self._locate(path, follow_final=True)
        folder, name = os.path.split(rel)
        temp_rel = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.apply_patch")

        def stage(confined: ConfinedRoot, _rel: str) -> None:
            with confined.parent(rel) as (fd, entry):
                try:
                    mode = stat_mod.S_IMODE(os.stat(entry, dir_fd=fd).st_mode)
                except (FileNotFoundError, NotADirectoryError):
                    mode = 0o666 & ~current_umask()
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                out = os.open(os.path.basename(temp_rel), flags, mode, dir_fd=fd)
                try:
                    os.fchmod(out, mode)
                    data = content.encode("utf-8", "surrogatepass")
                    while data:
                        data = data[os.write(out, data) :]
                    os.fsync(out)
                finally:
                    os.close(out)

        self._run(os.path.join(root, rel), False, stage)
        return StagedWrite(temp_path=os.path.join(root, temp_rel), target=os.path.join(root, rel))

    def rename(self, src: str, dst: str) -> None:
        """renameat beneath both roots (the entries themselves, never through a final link)."""
        src_root, src_rel = self._locate(src, follow_final=False)
        dst_root, dst_rel = self._locate(dst, follow_final=False)
        try:
            with ConfinedRoot(src_root) as a, ConfinedRoot(dst_root) as b:
                a.rename(src_rel, b, dst_rel)
        except PathEscapeError:
            raise os_error(errno.EPERM) from None
        except OSError as exc:
            raise _io_error(exc) from None
        _fsync_dir(os.path.dirname(dst) or ".")

    def remove(self, path: str) -> None:
        """Unlink the entry (a symlink itself, never its target)."""
        self._run(path, False, lambda r, rel: r.remove(rel))

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory beneath the root."""
        self._run(path, False, lambda r, rel: r.remove(rel))
