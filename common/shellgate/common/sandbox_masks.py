"""What a local sandbox hides: the service's credentials, as files and as whole folders.

A sandboxed command reads the whole filesystem (`--ro-bind / /`), and runs as the service's
own uid, so file modes protect nothing from it. Every secret a shellgate process holds or
wrote therefore reads empty inside every sandbox: the files its configuration names
(`secret_files()` of each daemon's config, with `masked_paths`), and two folders whatever
the configuration says: the local-token runtime directory (every daemon of this user
publishes its token there) and `~/.shellgate` (its fallback, and where the docs keep
hand-made token files).

A folder becomes an empty read-only tmpfs, a file a bind of `/dev/null` (empty, or EACCES
where the sandbox's mounts are `nodev`); both are mounted after the writable roots, so a
mask inside a writable root stays, and neither can be removed or renamed from inside. A path missing when the command
starts is skipped: there is nothing to read, and bubblewrap cannot mount over nothing.
A working directory or writable root inside a masked folder is refused, never run in an
empty folder. Under `run_as` bubblewrap runs as that other user: a path it cannot even
reach (a folder on the way denies it search) needs no mask, and gets none (bubblewrap
could not mount there).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from shellgate.common.errors import SandboxUnavailableError
from shellgate.common.local_token import ensure_runtime_dir, runtime_dir


def service_dirs() -> tuple[str, ...]:
    """The folders of this user's shellgate credentials, masked in every local sandbox."""
    # Created now (0700) if missing: a folder that exists when the command starts is masked
    # whole, so a token another daemon publishes there later is hidden too.
    with contextlib.suppress(OSError):
        ensure_runtime_dir()
    return (str(runtime_dir()), str(Path.home() / ".shellgate"))


# Who runs bubblewrap: a uid and its groups (None: this process's own user).
User = tuple[int, frozenset[int]]


def user_named(name: str) -> User:
    """The uid and groups `setpriv --init-groups` gives the user `name`."""
    entry = pwd.getpwnam(name)
    return entry.pw_uid, frozenset(os.getgrouplist(name, entry.pw_gid))


def _reachable(path: str, user: User | None) -> bool:
    """Whether `user` may search every folder on the way to `path`."""
    if user is None or user[0] == 0:
        return True
    uid, groups = user
    folder = os.path.dirname(path)
    while True:
        try:
            info = os.stat(folder)
        except OSError:
            return False
        if info.st_uid == uid:
            bit = stat.S_IXUSR
        else:
            bit = stat.S_IXGRP if info.st_gid in groups else stat.S_IXOTH
        if not info.st_mode & bit:
            return False
        if folder == "/":
            return True
        folder = os.path.dirname(folder)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _classify(paths: Iterable[str], user: User | None) -> tuple[list[str], list[str]]:
    """(folders, files) among the paths that exist now, resolved; nested ones dropped."""
    folders: list[str] = []
    files: list[str] = []
    for path in dict.fromkeys(os.path.realpath(os.path.expanduser(p)) for p in paths if p):
        if not _reachable(path, user):
            continue
        if os.path.isdir(path):
            folders.append(path)
        elif os.path.lexists(path):
            files.append(path)
    outer = [f for f in folders if not any(f != o and _within(f, o) for o in folders)]
    return outer, [f for f in files if not any(_within(f, d) for d in outer)]


def mask_args(
    paths: Iterable[str], cwd: str, writable_roots: Sequence[str], user: User | None = None,
    keep: Sequence[str] = (),
) -> list[str]:
    """bubblewrap arguments that make each of `paths` read empty (after the binds).

    A folder of `keep` inside a masked folder is bound back read-only (the egress proxy's
    socket folder, for the one command it serves); elsewhere `keep` changes nothing.
    """
    folders, files = _classify(paths, user)
    places = [("working directory", cwd), *(("writable root", r) for r in writable_roots)]
    for what, place in places if folders else ():
        real = os.path.realpath(place)
        hidden = next((f for f in folders if _within(real, f)), None)
        if hidden is not None:
            raise SandboxUnavailableError(
                f"the {what} {place} is inside {hidden}, which every sandbox hides (it holds "
                "the service's credentials); use a directory outside it"
            )
    args: list[str] = []
    for path in files:
        # /dev/null over a file: it exists but reads nothing, whatever the command's uid.
        args += ["--ro-bind", "/dev/null", path]
    for path in folders:
        args += ["--tmpfs", path]
        for kept in keep:
            if _within(kept, path):
                args += ["--ro-bind", kept, kept]
        args += ["--remount-ro", path]
    return args
