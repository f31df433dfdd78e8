"""The router's process title, `shellgate serve HOST:PORT`, and how to recognise one.

`ps`, `top` and `pgrep` otherwise show `python3 -m shellgate.router.cli.main serve …` (the
secret-scrubbing re-exec's argv). The title is written over argv with the `setproctitle`
package, which also sets the kernel's comm name (`/proc/PID/comm`, 15 bytes: `shellgate
serve`). SPT_NOENV keeps it from growing the title into the environment block: that block is
what `/proc/PID/environ` shows, and the test suite finds its children by a marker there.
"""

from __future__ import annotations

import ctypes
import os

TITLE_PREFIX = "shellgate serve"
_PR_SET_NAME = 15


def set_router_title(address: str) -> None:
    """Name this process `shellgate serve ADDRESS` (argv and comm)."""
    title = f"{TITLE_PREFIX} {address}"
    os.environ["SPT_NOENV"] = "1"  # read when the module sets itself up, at import
    try:
        import setproctitle
    except ImportError:
        # Without the package (an old install), at least the comm name `ps -o comm` shows.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, TITLE_PREFIX.encode(), 0, 0, 0)
    else:
        setproctitle.setproctitle(title)
    finally:
        # Commands inherit os.environ: the setting stays the router's own.
        os.environ.pop("SPT_NOENV", None)


def is_router_cmdline(cmdline: bytes) -> bool:
    """Whether a `/proc/PID/cmdline` is a shellgate router's, titled or still starting."""
    words = [w.decode(errors="replace") for w in cmdline.split(b"\0") if w]
    if not words:
        return False
    if " ".join(words).startswith(TITLE_PREFIX + " "):
        return True
    # Before the title: `python -m shellgate.router.cli.main serve …` or the `shellgate` script.
    for i, word in enumerate(words[:-1]):
        if word == "shellgate.router.cli.main" or os.path.basename(word) == "shellgate":
            return words[i + 1] == "serve"
    return False
