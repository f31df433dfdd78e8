"""The approved working directory: pinned by device and inode, checked where the child starts.

An approval is asked for a command in a directory. When it is asked, the directory is
identified (`identify_cwd`: `stat`, following symlinks: `(st_dev, st_ino)`); the spawn then
opens it once (`open_pinned_cwd`), compares the open directory with that identity and starts
the child in the open directory itself (`/proc/self/fd/N`), never by its path again. A path
swapped for a symlink to another directory (or replaced) after the approval was asked for
fails the spawn with `CWD_CHANGED`: nothing runs. Under bubblewrap, whose `--chdir` takes a
path inside the sandbox, `sandbox_cwd_check_argv` repeats the comparison on the sandboxed
side, right before the command is exec'd there.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import replace

from shellgate.common.errors import SpawnError
from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.launch import check_spawnable

__all__ = [
    "CWD_CHANGED",
    "MISSING_CWD",
    "CwdIdentity",
    "identify_cwd",
    "open_pinned_cwd",
    "pinned_cwd_path",
    "sandbox_cwd_check_argv",
    "spawnable_in_approved_cwd",
]

# (st_dev, st_ino) of a directory.
CwdIdentity = tuple[int, int]

# The identity of a cwd that did not exist when the approval was asked for: nothing matches.
MISSING_CWD: CwdIdentity = (-1, -1)

CWD_CHANGED = (
    "the working directory {cwd} is no longer the directory that was approved "
    "(it was replaced after the approval was asked for); nothing ran"
)

_FD_DIR = "/proc/self/fd"


def identify_cwd(path: str) -> CwdIdentity:
    """The directory `path` names now (symlinks followed); MISSING_CWD when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return MISSING_CWD
    return (st.st_dev, st.st_ino)


def open_pinned_cwd(path: str, identity: CwdIdentity) -> int:
    """Open `path` as a directory and check it is the approved one; the fd (close-on-exec).

    SpawnError with the OS error when it cannot be opened, with CWD_CHANGED when it is
    another directory than the one identified when the approval was asked for.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SpawnError(f"{exc.strerror}: {path!r}", exc.errno or 0) from exc
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != tuple(identity):
        os.close(fd)
        raise SpawnError(CWD_CHANGED.format(cwd=repr(path)), 0)
    return fd


def pinned_cwd_path(fd: int, path: str) -> str:
    """The cwd to hand Popen for an open directory: `/proc/self/fd/N` (the child's copy).

    Popen's child calls chdir before it closes descriptors and execs, so the magic link
    names the directory that was checked. Without /proc, the checked path (a small race).
    """
    return f"{_FD_DIR}/{fd}" if os.path.isdir(_FD_DIR) else path


def spawnable_in_approved_cwd(request: SpawnRequest) -> tuple[SpawnRequest, list[int]]:
    """`check_spawnable`, then the approved cwd opened and checked once: the request to
    spawn (cwd `/proc/self/fd/N`) and the fd to close after the spawn; without
    `cwd_identity`, the request unchanged and no fd."""
    check_spawnable(request)
    if request.cwd_identity is None:
        return request, []
    fd = open_pinned_cwd(request.cwd, request.cwd_identity)
    return replace(request, cwd=pinned_cwd_path(fd, request.cwd)), [fd]


def sandbox_cwd_check_argv(identity: CwdIdentity, argv: tuple[str, ...]) -> tuple[str, ...]:
    """`argv` behind a POSIX sh check that its cwd is the approved directory (bubblewrap).

    Bind mounts keep the device and inode, so the sandboxed side compares `.` with the
    identity taken on this host; the check runs `stat` by absolute path with an empty
    environment (the command's PATH or LD_PRELOAD cannot answer for it), then execs argv
    in the same directory. A mismatch prints CWD_CHANGED and exits 126.
    """
    stat, env = (
        shutil.which("stat", path="/usr/bin:/bin"),
        shutil.which("env", path="/usr/bin:/bin"),
    )
    if stat is None or env is None:
        raise SpawnError("cannot check the approved working directory here: no stat/env", 0)
    message = CWD_CHANGED.format(cwd="of the sandboxed command")
    script = (
        f'case "$({shlex.quote(env)} -i {shlex.quote(stat)} -L -c %d:%i .)" in '
        f'"$1") shift; exec "$@";; esac; '
        f"echo {shlex.quote('shellgate: ' + message)} >&2; exit 126"
    )
    return ("/bin/sh", "-c", script, "shellgate-cwd-check", f"{identity[0]}:{identity[1]}", *argv)
