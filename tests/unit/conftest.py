"""Unit tests start no process: a test that did (through product code too) fails, naming it.

The static rule is tests/unit/test_suite_layout.py; this guard catches what a module's source
does not show (e.g. a host probe that runs `bwrap`). The hooks wrap the few places every
process start goes through (`subprocess.Popen`, `os.fork`, `os.posix_spawn*`, `os.system`),
record the attempt and let it run, so the test's own failure is not obscured.

Product code probes the host once per process (bubblewrap: `common/sandbox._local_probe`, an
lru_cache). That probe runs once before the unit tests (`host_probed`), so no unit test is
blamed for being the first to need it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from shellgate.common.sandbox import sandbox_unavailable_reason

from tests.unit.test_suite_layout import ALLOWED


def _recording(record: list[str], what: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        shown = args[1] if what == "subprocess.Popen" and len(args) > 1 else args[:1]
        record.append(f"{what} {shown!r}"[:200])
        return original(*args, **kwargs)

    return wrapper


@pytest.fixture(autouse=True, scope="session")
def host_probed() -> None:
    """Run the host's cached bubblewrap probe (it starts bwrap) outside any unit test."""
    sandbox_unavailable_reason()


@pytest.fixture(autouse=True)
def no_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the unit test if it started a process."""
    started: list[str] = []
    # Popen._execute_child is where every subprocess (asyncio's too) is created.
    monkeypatch.setattr(
        subprocess.Popen,
        "_execute_child",
        _recording(started, "subprocess.Popen", subprocess.Popen._execute_child),  # type: ignore[attr-defined]
    )
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _recording(started, f"os.{name}", getattr(os, name)))
    yield
    module = request.node.path.relative_to(request.config.rootpath / "tests" / "unit")
    if started and str(module) not in ALLOWED:
        pytest.fail(
            f"a unit test started processes (move it to tests/integration/, or script the "
            f"process with tests/scripted_spawner.py): {started}"
        )
