"""Shared pieces of the fuzz suite: turns, a host, per-item time bounds and item counters."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, settings
from shellgate.router.apply_patch.memory_fs import MemoryFileSystem
from shellgate.router.pipeline import HostContext, RouterTurn
from shellgate.router.policy import Policy
from shellgate.router.runtime.environments.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2

T = TypeVar("T")

# Every item must finish within this bound (a MiB script included); a hang fails the test.
PER_ITEM_S = 10.0
# MiB items cost seconds of linear parser/policy work; on a loaded 2-core CI box allow more.
MEGABYTE_ITEM_S = 30.0
# Stable CI: the same examples on every run, no example database.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)
COUNTS: Counter[str] = Counter()

SHELL_TOOLS = (
    common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND,
    common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC,
    common_pb2.MODEL_SHELL_TOOL_TYPE_DEFAULT,
)


def turns(cwd: str) -> list[RouterTurn]:
    """One domain turn per shell tool type (shell_command, unified exec, default)."""
    inputs = TurnInputs(
        defaults=TurnDefaults(),
        environments={"local": EnvironmentView("local", False, cwd, None)},
        host_shell=gather_host_shell_facts(None),
    )
    out = []
    for tool in SHELL_TOOLS:
        ctx = common_pb2.TurnContext(
            environments=[common_pb2.TurnEnvironment(environment_id="local", cwd=cwd)],
            shell_tool_type=tool,
        )
        out.append(router_turn("fuzz", ctx, inputs))
    return out


def host() -> HostContext:
    """A host with an empty policy, a small parent env and an in-memory filesystem."""
    fs = MemoryFileSystem({"/work/a.txt": "a\n"}, dirs=("/work",))
    return HostContext(
        policy=Policy(),
        parent_env={"PATH": "/usr/bin:/bin", "HOME": "/root", "API_TOKEN": "t"},
        filesystem=lambda _env: fs,
    )


def timed(label: str, fn: Callable[[], T], bound_s: float = PER_ITEM_S) -> T:
    """Run one item under the per-item bound and count it."""
    start = time.monotonic()
    result = fn()
    elapsed = time.monotonic() - start
    assert elapsed < bound_s, f"{label}: one item took {elapsed:.1f} s"
    COUNTS[label] += 1
    return result
