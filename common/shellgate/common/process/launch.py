"""How a local child is exec'd: its own session set up without preexec_fn or extra execs."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from shellgate.common.errors import SpawnError
from shellgate.common.process.base import SpawnRequest

_SHIM = str(Path(__file__).with_name("_shim.py"))
# execvp's search path when the child env has no PATH.
_DEFAULT_PATH = "/bin:/usr/bin"


@dataclass(frozen=True)
class Launch:
    """Popen arguments: argv, the executable to run, whether Popen itself calls setsid."""

    argv: list[str]
    executable: str | None
    new_session: bool
    # True when the Python shim supervises the child (it reports status on a pipe).
    shim: bool


@lru_cache(maxsize=1)
def _setsid() -> str | None:
    """util-linux `setsid` when present (looked up once)."""
    return shutil.which("setsid")


def _runnable(candidate: str) -> bool | None:
    """True: an executable regular file; False: exists but cannot run; None: missing."""
    try:
        st = os.stat(candidate)
    except OSError:
        return None
    return stat.S_ISREG(st.st_mode) and os.access(candidate, os.X_OK)


# (cwd, PATH, program) -> the candidate that last proved runnable. Re-checked on every use:
# while it is still runnable the full search would succeed too (on it or an earlier entry),
# so one stat replaces a stat per PATH entry; otherwise the full search runs again.
_FOUND: dict[tuple[str, str, str], str] = {}
_FOUND_MAX = 1_024


def check_spawnable(request: SpawnRequest) -> None:
    """Raise SpawnError (the errno and text execvp would give) when argv[0] cannot run.

    A PTY child is exec'd through `setsid` (or the shim), so a missing program would
    otherwise surface as an exit code rather than a spawn failure; checking first keeps
    the contract, with the same text on every path.
    """
    if not os.path.isdir(request.cwd):
        code = errno.ENOTDIR if os.path.exists(request.cwd) else errno.ENOENT
        raise SpawnError(f"{os.strerror(code)}: {request.cwd!r}", code)
    program = request.argv[0]
    path = request.env.get("PATH", _DEFAULT_PATH)
    key = (request.cwd, path if "/" not in program else "", program)
    known = _FOUND.get(key)
    if known is not None and _runnable(known):
        return
    if "/" in program:
        candidates = [os.path.join(request.cwd, program)]
    else:
        candidates = [os.path.join(request.cwd, d or ".", program) for d in path.split(":")]
    denied = False
    for candidate in candidates:
        runnable = _runnable(candidate)
        if runnable:
            if len(_FOUND) >= _FOUND_MAX:
                _FOUND.clear()
            _FOUND[key] = candidate
            return
        denied = denied or runnable is False
    code = errno.EACCES if denied else errno.ENOENT
    raise SpawnError(f"{os.strerror(code)}: {program!r}", code)


def needs_shim(request: SpawnRequest) -> bool:
    """Only a PTY child with a custom arg0, or without util-linux `setsid`, needs the shim."""
    custom_arg0 = request.arg0 is not None and request.arg0 != request.argv[0]
    return request.tty and (custom_arg0 or _setsid() is None)


def plan_launch(request: SpawnRequest, status_fd: int, daemon_pid: int) -> Launch:
    """The cheapest launch that gives the child its own session and process group.

    Pipes: Popen's C-level setsid and a vfork straight into the program (a custom arg0 is
    Popen's `executable`). PTY: `setsid --ctty` also takes the terminal on fd 0 (it must
    not already lead a group, or it forks). A PTY child with a custom arg0, or on a host
    without `setsid`, goes through the Python shim (slower, same guarantees). No
    parent-death exec wrapper: it cost a whole exec per spawn and covered only the direct
    child; the group guardian signals the whole group instead (see guardian.py).
    """
    argv = list(request.argv)
    custom_arg0 = request.arg0 is not None and request.arg0 != argv[0]
    if not request.tty:
        if custom_arg0:
            assert request.arg0 is not None
            return Launch([request.arg0, *argv[1:]], argv[0], True, False)
        return Launch(argv, None, True, False)
    setsid = _setsid()
    if not needs_shim(request):
        assert setsid is not None
        return Launch([setsid, "--ctty", "--", *argv], None, False, False)
    shim = [sys.executable, "-I", "-S", _SHIM, str(status_fd), str(daemon_pid)]
    shim += ["1" if request.tty else "0", "--", argv[0], request.arg0 or argv[0], *argv[1:]]
    return Launch(shim, None, False, True)
