"""The filesystem seam of the apply_patch runtime: local now, an exec-server's file RPCs later."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Protocol

# glibc's strerror texts for the errors a patch can meet. Rust renders an OS error as
# `{strerror} (os error {errno})`, and the model sees exactly that.
_STRERROR = {
    1: "Operation not permitted",
    2: "No such file or directory",
    5: "Input/output error",
    13: "Permission denied",
    17: "File exists",
    20: "Not a directory",
    21: "Is a directory",
    28: "No space left on device",
    30: "Read-only file system",
    36: "File name too long",
    39: "Directory not empty",
    40: "Too many levels of symbolic links",
    122: "Disk quota exceeded",
}
ENOENT = 2
EISDIR = 21
ENOTDIR = 20
EEXIST = 17
INVALID_UTF8 = "stream did not contain valid UTF-8"


class PatchIoError(Exception):
    """A filesystem failure; `message` is Rust's io::Error Display text."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errno = errno


def os_error(errno: int, strerror: str | None = None) -> PatchIoError:
    """The error for an errno, rendered as `{strerror} (os error {errno})`."""
    text = strerror or _STRERROR.get(errno, f"Unknown error {errno}")
    return PatchIoError(f"{text} (os error {errno})", errno)


@dataclass(frozen=True)
class FileStat:
    """What the runtime needs to know about an existing path."""

    is_file: bool
    is_dir: bool


@dataclass(frozen=True)
class StagedWrite:
    """New contents written durably beside their target, not yet visible at `target`."""

    temp_path: str
    target: str


class PatchFileSystem(Protocol):
    """File operations on absolute paths; failures raise PatchIoError."""

    def read_text(self, path: str) -> str:
        """The file's contents as UTF-8 text."""
        ...

    def stat(self, path: str) -> FileStat | None:
        """File or directory info, following symlinks; None when nothing is there."""
        ...

    def make_dirs(self, path: str) -> None:
        """Create a directory and its missing parents (no error when it exists)."""
        ...

    def stage_write(self, path: str, content: str) -> StagedWrite:
        """Write `content` to a new temporary file beside `path` (fsynced, `path`'s mode)."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Atomically move `src` over `dst` (same filesystem)."""
        ...

    def remove(self, path: str) -> None:
        """Remove a file (not a directory)."""
        ...

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory."""
        ...

    def resolve(self, path: str) -> str:
        """Where a write to `path` lands (symlinks followed; the path itself where unknown)."""
        ...

    def confined(self, roots: tuple[str, ...]) -> PatchFileSystem:
        """A view whose mutations can never land outside `roots`, whatever symlinks say."""
        ...


def write_atomic(fs: PatchFileSystem, path: str, content: str) -> None:
    """Replace `path` with `content` all at once: readers see the old or the new file."""
    staged = fs.stage_write(path, content)
    try:
        fs.rename(staged.temp_path, staged.target)
    except PatchIoError:
        _discard(fs, staged)
        raise


def _discard(fs: PatchFileSystem, staged: StagedWrite) -> None:
    with contextlib.suppress(PatchIoError):
        fs.remove(staged.temp_path)
