"""An in-memory PatchFileSystem (POSIX paths), used by the conformance adapter and tests."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

from shellgate.router.apply_patch.fs import (
    EEXIST,
    EISDIR,
    ENOENT,
    ENOTDIR,
    FileStat,
    PatchIoError,
    StagedWrite,
    os_error,
)


class MemoryFileSystem:
    """Files as a path → text map; directories are implied by files or created explicitly."""

    def __init__(self, files: Mapping[str, str] | None = None, dirs: Iterable[str] = ()) -> None:
        self.files: dict[str, str] = dict(files or {})
        self.dirs: set[str] = {"/"}
        for d in dirs:
            self._add_dir_chain(d)
        for path in self.files:
            self._add_dir_chain(posixpath.dirname(path))
        self._temp_counter = 0
        # Paths whose writes / removals fail, to exercise error paths: path → errno.
        self.fail_writes: dict[str, int] = {}
        self.fail_removes: dict[str, int] = {}
        self.fail_renames: dict[str, int] = {}

    def _add_dir_chain(self, directory: str) -> None:
        while directory not in self.dirs:
            self.dirs.add(directory)
            directory = posixpath.dirname(directory)

    def _check_parent(self, path: str) -> None:
        directory = posixpath.dirname(path)
        probe = directory
        while probe not in self.dirs:
            if probe in self.files:
                raise os_error(ENOTDIR)
            up = posixpath.dirname(probe)
            if up == probe:
                break
            probe = up
        if directory not in self.dirs:
            raise os_error(ENOENT)

    def read_text(self, path: str) -> str:
        """The file's text."""
        if path in self.files:
            return self.files[path]
        if path in self.dirs:
            raise os_error(EISDIR)
        self._check_parent(path)
        raise os_error(ENOENT)

    def stat(self, path: str) -> FileStat | None:
        """File or directory info, or None."""
        if path in self.files:
            return FileStat(is_file=True, is_dir=False)
        if path in self.dirs:
            return FileStat(is_file=False, is_dir=True)
        return None

    def make_dirs(self, path: str) -> None:
        """Create a directory chain; a file in the way is an error."""
        probe = path
        while probe not in self.dirs:
            if probe in self.files:
                raise os_error(EEXIST if probe == path else ENOTDIR)
            up = posixpath.dirname(probe)
            if up == probe:
                break
            probe = up
        self._add_dir_chain(path)

    def stage_write(self, path: str, content: str) -> StagedWrite:
        """Write a hidden temp file beside `path`."""
        if path in self.fail_writes:
            raise os_error(self.fail_writes[path])
        self._check_parent(path)
        self._temp_counter += 1
        temp = posixpath.join(
            posixpath.dirname(path), f".{posixpath.basename(path)}.{self._temp_counter}.tmp"
        )
        self.files[temp] = content
        return StagedWrite(temp_path=temp, target=path)

    def rename(self, src: str, dst: str) -> None:
        """Move a file over another path."""
        if dst in self.fail_renames:
            raise os_error(self.fail_renames[dst])
        if src not in self.files:
            raise os_error(ENOENT)
        if dst in self.dirs:
            raise os_error(EISDIR)
        self._check_parent(dst)
        self.files[dst] = self.files.pop(src)

    def remove(self, path: str) -> None:
        """Remove a file."""
        if path in self.fail_removes:
            raise os_error(self.fail_removes[path])
        if path in self.dirs:
            raise os_error(EISDIR)
        if path not in self.files:
            raise os_error(ENOENT)
        del self.files[path]

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory."""
        if path not in self.dirs:
            raise os_error(ENOENT)
        prefix = path.rstrip("/") + "/"
        if any(p.startswith(prefix) for p in [*self.files, *self.dirs]):
            raise PatchIoError("Directory not empty (os error 39)", 39)
        self.dirs.discard(path)

    def resolve(self, path: str) -> str:
        """No symlinks here: a path is where it writes."""
        return path

    def confined(self, roots: tuple[str, ...]) -> MemoryFileSystem:
        """No symlinks here: the lexical check already confines."""
        del roots
        return self
