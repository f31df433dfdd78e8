"""Suite-wide guards: every test's child processes carry a marker and must not survive it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MARKER_VAR = "SHELLGATE_TEST_MARK"


def marked_pids(marker: str) -> list[int]:
    """Pids of live processes whose environment carries MARKER_VAR=marker."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found: list[int] = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True, scope="session")
def clean_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run the suite with an empty HOME.

    Login shells (`bash -lc`, the default for model commands) source the user's profile;
    on a developer machine that may run slow or locking hooks (e.g. `pyenv rehash`, which
    waits on a lock a killed shell can leave behind). Tests must not depend on it.
    """
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old


@pytest.fixture(autouse=True)
def orphan_sweep(request: pytest.FixtureRequest) -> Iterator[str]:
    """Tag children through the environment; fail the test if any outlives it."""
    marker = f"{os.getpid()}-{abs(hash(request.node.nodeid)) % 10**12}"
    old = os.environ.get(MARKER_VAR)
    os.environ[MARKER_VAR] = marker
    try:
        yield marker
    finally:
        if old is None:
            os.environ.pop(MARKER_VAR, None)
        else:
            os.environ[MARKER_VAR] = old
    # Reaping is asynchronous (process groups get TERM, a grace period, then KILL).
    deadline = time.monotonic() + 5.0
    leftovers = marked_pids(marker)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.05)
        leftovers = marked_pids(marker)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if leftovers and request.node.get_closest_marker("allow_orphans") is None:
        pytest.fail(f"test left marked processes alive: {leftovers}")
