"""The local PatchFileSystem: UTF-8 reads, durable atomic writes (temp + fsync + os.replace)."""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import tempfile

from shellgate.router.apply_patch.fs import (
    INVALID_UTF8,
    FileStat,
    PatchIoError,
    StagedWrite,
    os_error,
)


def _io_error(exc: OSError) -> PatchIoError:
    if exc.errno is None:
        return PatchIoError(str(exc))
    return os_error(exc.errno, exc.strerror)


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


class LocalFileSystem:
    """The host's filesystem; paths are absolute host paths."""

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
            mode = 0o666 & ~_umask()
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
