"""The embedded router dies with `shellgate mcp`, with setpriv and through the fallback
trampoline alike (no `preexec_fn`: grpc/grpc#43055): SIGKILL the parent, the child goes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proc_scan import alive
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[2]

# A parent that starts `sleep` the way EmbeddedRouter starts the router, prints its pid and
# waits to be killed. It imports grpc first, as `shellgate mcp` has by then.
PARENT = """
import subprocess, sys, time
import grpc  # noqa: F401  (loaded, as in `shellgate mcp`)
from shellgate.mcp.embedded import dying_with_parent
setpriv = sys.argv[1] or None
child = subprocess.Popen(dying_with_parent(["/bin/sleep", "300"], setpriv))
time.sleep(0.3)  # the trampoline execs `sleep` (same pid)
print(child.pid, flush=True)
time.sleep(300)
"""


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


@pytest.mark.parametrize("how", ["setpriv", "trampoline"])
def test_child_dies_when_the_parent_is_killed(how: str) -> None:
    setpriv = shutil.which("setpriv") if how == "setpriv" else ""
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        str(REPO / p) for p in ("client", "protos", "common", "server", "execserver"))}  # fmt: skip
    parent = subprocess.Popen([sys.executable, "-c", PARENT, setpriv], stdout=subprocess.PIPE,
                              env=env, start_new_session=True)  # fmt: skip
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        # The wrapper exec'd the command: the pid now runs `sleep 300` itself.
        assert _cmdline(child) == ["/bin/sleep", "300"]
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        eventually(lambda: not alive(child), "the child to die with its SIGKILLed parent", 10)
    finally:
        # The parent's session: the child too, should the assertion above have failed.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()


def test_trampoline_gives_up_when_the_parent_is_already_gone() -> None:
    # The parent pid it was told is not its parent: exit 1, nothing exec'd.
    from shellgate.mcp.embedded import _TRAMPOLINE

    done = subprocess.run([sys.executable, "-c", _TRAMPOLINE, "1", "/bin/echo", "ran"],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 1 and "ran" not in done.stdout
