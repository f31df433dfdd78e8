"""Secret-named variables kept out of a daemon's `/proc/<pid>/environ`, held in memory instead.

A daemon started with `*KEY*` / `*SECRET*` / `*TOKEN*` variables re-executes itself without
them (spec 06 §9), so its environment block, which any process of the same user can read,
holds none. The values cross the exec in an anonymous memory file, not in the environment
or argv, and the re-executed process takes them back with `take_held()`: the router offers
them to commands whose policy sets `ignore_default_excludes = true` (spec decision 3b), as
Codex does with its own environment. The marker variable naming that file is removed from
`os.environ` at once, so no command ever sees it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Sequence

from shellgate.common.env_policy import DEFAULT_EXCLUDES

HELD_FD_VAR = "SHELLGATE_HELD_ENV_FD"
# Bounds what a forged marker could make the daemon read (an environment is far smaller).
_MAX_HELD_BYTES = 16 * 1024 * 1024


def is_secret_name(name: str) -> bool:
    """True for the default-excluded names (*KEY*, *SECRET*, *TOKEN*, any case)."""
    return any(fnmatch.fnmatchcase(name.upper(), pattern) for pattern in DEFAULT_EXCLUDES)


def scrub_and_reexec(module: str, argv: Sequence[str]) -> None:
    """Re-execute `python -m module argv…` without secret-named variables (no-op after it).

    Exec keeps the pid and every inheritable fd, so a supervisor notices nothing.
    """
    if HELD_FD_VAR in os.environ:
        return
    secrets = {k: v for k, v in os.environ.items() if is_secret_name(k)}
    if not secrets:
        return
    fd = os.memfd_create("shellgate-held-env", 0)  # no CLOEXEC: it must survive the exec
    data = json.dumps(secrets).encode()
    while data:
        data = data[os.write(fd, data) :]
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k)}
    env[HELD_FD_VAR] = str(fd)
    os.execve(sys.executable, [sys.executable, "-m", module, *argv], env)


def take_held() -> dict[str, str]:
    """The variables the re-exec held back (empty without one); the marker leaves os.environ."""
    value = os.environ.pop(HELD_FD_VAR, None)
    if value is None or not value.isdigit():
        return {}
    fd = int(value)
    try:
        data = os.pread(fd, _MAX_HELD_BYTES, 0)
        os.close(fd)
        held = json.loads(data)
    except (OSError, ValueError):
        return {}
    if not isinstance(held, dict):
        return {}
    return {str(k): str(v) for k, v in held.items() if is_secret_name(str(k))}
