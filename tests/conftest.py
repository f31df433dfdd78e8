"""Suite-wide guards: every test's child processes carry a marker and must not survive it."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from tests.waiting import eventually

MARKER_VAR = "SHELLGATE_TEST_MARK"


# Folders whose tests run one after another on one pytest-xdist worker (tests/README.md).
SERIAL_FOLDERS = {
    # They kill and restart routers, daemons and Redis and count what survives: two at
    # once would only measure each other.
    "fault": "fault",
    # The documented blocks run as written, on the documented fixed ports (50051 …).
    "docs": "fixed-ports",
}


def _uses_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture made once per module (or class): a router fleet, a
    built wheel, a browser…"""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs[-1].scope in ("module", "class", "package")
        for defs in info.name2fixturedefs.values()
        if defs
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of SERIAL_FOLDERS in their xdist group (`--dist loadgroup`), and keep
    the tests of a module with a module-scoped fixture on one worker, so that fixture is
    made once rather than once per worker."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue  # the module named its group (e.g. a fixed port it binds)
        group = SERIAL_FOLDERS.get(item.path.parent.name)
        if group is None and _uses_module_fixture(item):
            group = f"module:{item.path.relative_to(item.config.rootpath)}"
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def marked_pids(marker: str) -> list[int]:
    """Pids of live processes whose environment carries MARKER_VAR=marker."""
    # Runs after every test (~7 000 times a run): plain os/open calls, and a process's
    # stat is read only when its environment carries the marker (0.4 ms, was 5 ms).
    needle = f"{MARKER_VAR}={marker}".encode()
    found: list[int] = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ_file:
                environ = environ_file.read()
            if needle not in environ or needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                state = stat_file.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            found.append(int(name))
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
    with contextlib.suppress(AssertionError):
        eventually(lambda: not marked_pids(marker), "the test's processes to end", timeout_s=5.0)
    leftovers = marked_pids(marker)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if leftovers and request.node.get_closest_marker("allow_orphans") is None:
        pytest.fail(f"test left marked processes alive: {leftovers}")
