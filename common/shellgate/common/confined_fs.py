"""File mutations confined beneath a root directory fd: no symlink or `..` ever leads out.

Paths are relative to the root and resolved by the kernel with openat2(2)
`RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` where it has it (Linux 5.6+), otherwise by a walk
one component at a time (`openat` with `O_NOFOLLOW`) that applies the same rules itself:

* a relative symlink is followed while it stays beneath the root;
* an absolute symlink, and a `..` that would climb above the root, is refused with
  `PathEscapeError` (EXDEV), even when it would land back inside;
* the final component of an operation is never followed: the operation acts on the entry
  itself (removing a symlink removes the link, writing over one replaces the link); the
  root itself is no entry beneath the root (PathEscapeError), a final `..` is EINVAL.

The walk takes `..` back to the directory it came from (the fds it holds), which is what
the kernel does unless a directory is moved mid-walk; it cannot tell /proc magic links
from others, but their text is absolute (refused) or names no file (ENOENT).

Every mutation is an `*at` call on a directory fd opened beneath the root and a plain name,
so a folder swapped for a symlink after a check cannot redirect it: the check and the act
share one fd. The threat is a writer *inside* the root; a directory once opened cannot be
moved out of it by someone who can only write inside.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
from collections.abc import Iterator
from functools import cache

from shellgate.common.confined_guard import (
    Identity,
    ProtectedPathError,
    check_dir,
    check_first_component,
    check_place,
    protected_identities,
)

__all__ = [
    "MAX_REMOVE_DEPTH",
    "ConfinedRoot",
    "PathEscapeError",
    "ProtectedPathError",
    "current_umask",
    "kernel_resolves_beneath",
    "write_at",
]

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_AT_FDCWD = -100
_SYS_OPENAT2 = 437  # the same on every architecture Linux shares a syscall table on
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
# The kernel answers EAGAIN when a rename raced a `..` under RESOLVE_BENEATH (it asks for a
# retry), and a removal retries while a racer swaps the entry; a racer that never pauses
# could keep either going, so both give up after this many rounds (EAGAIN).
_RETRIES = 64
_MAX_SYMLINKS = 40  # the kernel's own limit (ELOOP beyond it)
_WALK_SWAPS = 8  # a component seen as a link, then as no link: looked at again this often
# Recursive removal holds one fd and two Python frames per level of the tree.
MAX_REMOVE_DEPTH = 256


class PathEscapeError(OSError):
    """The path would leave its root (absolute, an absolute symlink, or `..` above it)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EXDEV, "path escapes its root", path)


def current_umask() -> int:
    """The process umask, read without setting it (os.umask races with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


def _openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    how = _OpenHow(flags, 0, resolve)
    raw = os.fsencode(path)
    for _ in range(_RETRIES):
        fd = int(
            _libc().syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_long(dir_fd),
                ctypes.c_char_p(raw),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code not in (errno.EAGAIN, errno.EINTR):
            raise OSError(code, os.strerror(code), path)
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), path)


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@cache
def kernel_resolves_beneath() -> bool:
    """Whether openat2 works here (Linux 5.6+, not filtered out by a seccomp profile)."""
    if platform.system() != "Linux" or platform.machine() == "alpha" or _O_PATH == os.O_RDONLY:
        return False
    try:
        os.close(_openat2(_AT_FDCWD, "/", _DIR_FLAGS, _RESOLVE_NO_MAGICLINKS))
    except (OSError, AttributeError):
        return False  # ENOSYS (old kernel), EPERM (seccomp), or no syscall() in libc
    return True


def _walk(root_fd: int, rel: str) -> int:
    """openat2 RESOLVE_BENEATH in user space: a directory fd for rel, never above root_fd."""
    if rel.startswith("/"):
        raise PathEscapeError(rel)
    pending = rel.split("/")[::-1]  # a stack: the next component last
    opened: list[int] = []  # directories below the root, the innermost last
    links = swaps = 0
    try:
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                # Climbing back out of a directory this walk entered, never above the root.
                if not opened:
                    raise PathEscapeError(rel)
                os.close(opened.pop())
                continue
            here = opened[-1] if opened else root_fd
            try:
                opened.append(os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=here))
                continue
            except OSError as exc:
                # A symlink gives ELOOP (ENOTDIR with O_PATH); a plain file gives ENOTDIR.
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                failure = exc
            try:
                target = os.readlink(name, dir_fd=here)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                # Not a symlink: a file (the open's answer stands), or a link swapped back
                # for a folder since the open (look again, a bounded number of times).
                swaps += 1
                if swaps > _WALK_SWAPS:
                    raise failure from None
                pending.append(name)
                continue
            links += 1
            if links > _MAX_SYMLINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), rel)
            if target.startswith("/"):
                raise PathEscapeError(rel)
            pending.extend(target.split("/")[::-1])
        return opened.pop() if opened else os.dup(root_fd)
    finally:
        for fd in opened:
            os.close(fd)


def _open_root(path: str, kernel: bool) -> int:
    """An O_PATH fd of an absolute directory path that must contain no symlink at all."""
    if not os.path.isabs(path):
        raise ValueError(f"root must be an absolute path: {path!r}")
    # A root path is resolved by whoever configured it; a symlink in it now means something
    # (inside another root, say) swapped a folder, so it is refused rather than followed.
    if kernel:
        try:
            return _openat2(_AT_FDCWD, path, _DIR_FLAGS, _RESOLVE_NO_SYMLINKS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathEscapeError(path) from None
            raise
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in path.split("/"):
            if name in ("", "."):
                continue
            if name == "..":
                raise PathEscapeError(path)
            try:
                inner = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
                    raise PathEscapeError(path) from None
                raise
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return False
    return True


def _parts(rel: str) -> list[str]:
    if rel.startswith("/"):
        raise PathEscapeError(rel)
    return [p for p in rel.split("/") if p not in ("", ".")]


class ConfinedRoot:
    """An open root directory every operation stays beneath (`with`, or close()).

    With `protect` (the default) its protected names stay read-only, as under the sandbox
    (`confined_guard`): a change there is ProtectedPathError (EROFS).
    """

    def __init__(self, path: str, *, use_openat2: bool | None = None, protect: bool = True) -> None:
        # use_openat2 None: the kernel's openat2 where it works; False forces the walk.
        self.path = path
        self._kernel = kernel_resolves_beneath() if use_openat2 is None else use_openat2
        self.fd = _open_root(path, self._kernel)
        self._protect = protect
        self._protected: frozenset[Identity] = (
            protected_identities(self.fd, path) if protect else frozenset()
        )

    def close(self) -> None:
        """Release the root's fd."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> ConfinedRoot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open_dir(self, rel: str) -> int:
        """An O_PATH fd of the directory rel beneath the root (the caller closes it)."""
        if self._kernel:
            try:
                flags = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS
                return _openat2(self.fd, rel or ".", _DIR_FLAGS, flags)
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    raise PathEscapeError(rel) from None
                raise
        return _walk(self.fd, rel)

    @contextlib.contextmanager
    def parent(self, rel: str) -> Iterator[tuple[int, str]]:
        """The directory holding rel's final entry (opened beneath the root) and its name."""
        parts = _parts(rel)
        if not parts:
            # The root itself: its entry lives in a directory above the root.
            raise PathEscapeError(rel)
        if parts[-1] == "..":
            raise OSError(errno.EINVAL, "path ends in `..`", rel)
        if self._protect:
            check_first_component(rel)
        fd = self.open_dir("/".join(parts[:-1]))
        try:
            # The fd checked is the fd the operation then uses (no window for a swap).
            check_place(fd, parts[-1], self.fd, self._protected, rel)
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def make_dir(self, rel: str, mode: int = 0o777, *, parents: bool = False) -> None:
        """mkdir; with parents `mkdir -p`, one component at a time, each beneath the root."""
        parts = _parts(rel)
        if not parents:
            if not parts:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), rel)
            with self.parent(rel) as (fd, name):
                os.mkdir(name, mode, dir_fd=fd)
            return
        for depth in range(1, len(parts) + 1):
            self._ensure_dir("/".join(parts[:depth]), mode)

    def _ensure_dir(self, prefix: str, mode: int) -> None:
        # Like os.makedirs: an existing directory is fine, anything else there is EEXIST.
        exists = FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), prefix)
        try:
            os.close(self.open_dir(prefix))
            return
        except FileNotFoundError:
            pass
        except NotADirectoryError:
            raise exists from None
        with self.parent(prefix) as (fd, name):
            try:
                os.mkdir(name, mode, dir_fd=fd)
                return
            except FileExistsError:
                pass
        # Made by someone else meanwhile, or a dangling symlink: only a directory will do.
        try:
            os.close(self.open_dir(prefix))
        except (FileNotFoundError, NotADirectoryError):
            raise exists from None

    def remove(self, rel: str, *, recursive: bool = False) -> None:
        """Remove a file, symlink or empty directory; with recursive, a whole tree."""
        with self.parent(rel) as (fd, name):
            _remove_entry(fd, name, recursive, 0, self._protected)

    def rename(self, rel: str, dst_root: ConfinedRoot, dst_rel: str) -> None:
        """Rename rel to dst_rel beneath dst_root, replacing a destination file (os.replace)."""
        with self.parent(rel) as (src_fd, src), dst_root.parent(dst_rel) as (dst_fd, dst):
            os.replace(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def write_file(
        self, rel: str, data: bytes, mode: int | None = None, *, temp_prefix: str = ".confined-"
    ) -> None:
        """Atomic write: a temp file beside the target, fsync, rename over the entry."""
        with self.parent(rel) as (fd, name):
            write_at(fd, name, data, mode, temp_prefix)


def write_at(dir_fd: int, name: str, data: bytes, mode: int | None, temp_prefix: str) -> None:
    """Atomically replace the entry name in dir_fd with data (mode None: keep the file's)."""
    if mode is None:
        try:
            # Follows a final symlink, like a plain write would read the mode it keeps.
            mode = os.stat(name, dir_fd=dir_fd).st_mode & 0o7777
        except (FileNotFoundError, NotADirectoryError):
            mode = 0o666 & ~current_umask()
    temp = f"{temp_prefix}{os.urandom(6).hex()}.tmp"
    # O_EXCL | O_NOFOLLOW: the temp name can be neither an existing file nor a planted link.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        # rename(2) replaces the final entry itself: a symlink there is replaced, not followed.
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _remove_entry(
    dir_fd: int, name: str, recursive: bool, depth: int, protected: frozenset[Identity]
) -> None:
    # Unlink first and look at the error rather than stat first: a stat would be stale by
    # the time of the act. A racer swapping the entry between a directory and a link makes
    # the loop go round again; each pass acts only on what is in dir_fd at that moment.
    for _ in range(_RETRIES):
        try:
            os.unlink(name, dir_fd=dir_fd)
            return
        except IsADirectoryError:
            pass
        if recursive:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    continue  # no longer a directory: unlink it
                raise
            try:
                check_dir(fd, protected, name)
                _empty(fd, depth, protected)
            finally:
                os.close(fd)
        try:
            os.rmdir(name, dir_fd=dir_fd)
            return
        except NotADirectoryError:
            continue  # swapped for a link or a file meanwhile
        except OSError as exc:
            if not (recursive and exc.errno == errno.ENOTEMPTY):
                raise
            # refilled meanwhile: empty it again
    raise OSError(errno.EAGAIN, "the entry kept changing while it was removed", name)


def _empty(dir_fd: int, depth: int, protected: frozenset[Identity]) -> None:
    if depth >= MAX_REMOVE_DEPTH:
        raise OSError(errno.ENAMETOOLONG, f"tree deeper than {MAX_REMOVE_DEPTH} levels")
    with os.scandir(dir_fd) as entries:
        names = [entry.name for entry in entries]
    for name in names:
        with contextlib.suppress(FileNotFoundError):  # removed by someone else meanwhile
            _remove_entry(dir_fd, name, True, depth + 1, protected)
