"""The test tiers keep their promise: a `tests/unit/` module starts no process and no server.

`pytest tests/unit` is the seconds-long loop (tests/README.md). Tests that start processes,
daemons, routers, sshd, Redis or a browser belong in `tests/integration/` (or `fault/`,
`contract/`, `deploy/`). Two checks enforce it:

* this file reads every `tests/unit/` module (AST): no `subprocess`/`multiprocessing`/`pty`
  import, no `os.fork`/`os.system`/`os.posix_spawn`/`asyncio.create_subprocess_*`, no
  process-starting harness (`running_router`, `daemon_subprocess`, `LocalBackend`, …), and
  the runtime `Harness` only with a scripted spawner (`Harness(..., spawner=...)`);
* `tests/unit/conftest.py` fails a unit test that started a process anyway (through
  product code: e.g. a host probe running `bwrap`).

ALLOWED names the exceptions, each with its reason; it is empty on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

UNIT = REPO_ROOT / "tests" / "unit"

# module (relative to tests/unit) → why it may start processes. Keep it empty: a test that
# needs a process is an integration test.
ALLOWED: dict[str, str] = {}

BANNED_MODULES = {
    "subprocess": "starts processes",
    "multiprocessing": "forks worker processes",
    "pty": "forks a child on a pty",
}
BANNED_CALLS = {
    ("os", name): "starts a process"
    for name in (
        "fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp",
        "execv", "execve", "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnlp",
    )
} | {
    ("asyncio", "create_subprocess_exec"): "starts a process",
    ("asyncio", "create_subprocess_shell"): "starts a process",
    ("grpc", "server"): "starts a gRPC server",
}  # fmt: skip
# Test helpers that start real components (names wherever they are imported from).
BANNED_NAMES = {
    "Popen": "starts a process",
    "create_subprocess_exec": "starts a process",
    "create_subprocess_shell": "starts a process",
    "running_router": "starts a router on loopback",
    "router_subprocess": "starts a router process",
    "daemon_subprocess": "starts an exec-server process",
    "in_process_daemon": "starts an exec-server on loopback",
    "start_router": "starts a router's servers",
    "redis_server": "starts redis-server",
    "sshd": "starts sshd",
    "chromium": "starts a browser",
    "LocalBackend": "spawns real processes",
    "LocalEnvironment": "spawns real processes",
}
# Helper modules whose purpose is to start real components.
BANNED_HELPERS = {
    "tests.router_harness": "routers in-process on loopback or as subprocesses",
    "tests.execserver_harness": "exec-server daemons",
    "tests.sshd": "a real sshd",
    "tests.child": "child processes",
    "tests.integration.replicas": "router fleets, Redis, daemons",
    "tests.integration.shared_support": "redis-server",
    "tests.integration.mcp_support": "shellgate mcp processes",
    "tests.integration.console_support": "routers and a browser",
    "tests.integration.codex_harness": "a real codex",
    "tests.integration.codex_app_server": "codex app-server",
}


def _dotted(node: ast.expr) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return ()


def violations(source: str) -> list[str]:
    """Why a unit test module's source would start processes or servers (empty: it would not)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in BANNED_MODULES:
                    found.append(f"{where}: import {alias.name} ({BANNED_MODULES[top]})")
                if alias.name in BANNED_HELPERS:
                    found.append(f"{where}: import {alias.name} ({BANNED_HELPERS[alias.name]})")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in BANNED_MODULES:
                found.append(f"{where}: from {node.module} ({BANNED_MODULES[top]})")
            if node.module in BANNED_HELPERS:
                found.append(f"{where}: from {node.module} ({BANNED_HELPERS[node.module]})")
            for alias in node.names:
                if alias.name in BANNED_NAMES:
                    found.append(f"{where}: imports {alias.name} ({BANNED_NAMES[alias.name]})")
                if (top, alias.name) in BANNED_CALLS:
                    found.append(f"{where}: imports {top}.{alias.name}")
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted[-2:] in BANNED_CALLS or dotted[-3:] == ("grpc", "aio", "server"):
                found.append(f"{where}: {'.'.join(dotted)} (starts a process or server)")
            elif node.attr in BANNED_NAMES:
                found.append(f"{where}: {'.'.join(dotted)} ({BANNED_NAMES[node.attr]})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name == "Harness" and not any(k.arg == "spawner" for k in node.keywords):
                found.append(f"{where}: Harness(...) without spawner= runs real bash")
            elif name in BANNED_NAMES:
                found.append(f"{where}: {name}(...) ({BANNED_NAMES[name]})")
    return found


# The two modules that enforce the rule name what they ban (the guard wraps subprocess).
ENFORCERS = {"test_suite_layout.py", "conftest.py"}


def _unit_modules() -> list[Path]:
    return sorted(p for p in UNIT.rglob("*.py") if str(p.relative_to(UNIT)) not in ENFORCERS)


@pytest.mark.parametrize("path", _unit_modules(), ids=lambda p: str(p.relative_to(UNIT)))
def test_unit_modules_start_no_process_and_no_server(path: Path) -> None:
    relative = str(path.relative_to(UNIT))
    if relative in ALLOWED:
        pytest.skip(f"allowed: {ALLOWED[relative]}")
    found = violations(path.read_text(encoding="utf-8"))
    assert not found, (
        f"tests/unit/{relative} starts processes or servers; move those tests to "
        f"tests/integration/ (or use tests/scripted_spawner.py): {found}"
    )


def test_every_allowed_module_exists_and_says_why() -> None:
    for relative, reason in ALLOWED.items():
        assert (UNIT / relative).is_file(), relative
        assert len(reason) > 20, f"{relative}: say why it must start a process"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\n",
        "from subprocess import run\n",
        "import multiprocessing.pool\n",
        "import os\nos.fork()\n",
        "import os\nos.system('true')\n",
        "import asyncio\nasyncio.create_subprocess_exec('true')\n",
        "from asyncio import create_subprocess_shell\n",
        "import grpc\ngrpc.server(None)\n",
        "import grpc\ngrpc.aio.server()\n",
        "from tests.router_harness import router_config\n",
        "from tests.integration.replicas import Fleet\n",
        "from tests.execserver_harness import daemon_subprocess\n",
        "from shellgate.common.process.local import LocalBackend\n",
        "from tests.integration.runtime_support import Harness\nHarness(tmp)\n",
        "import x\nx.running_router(config)\n",
    ],
)
def test_the_rule_catches_each_kind(source: str) -> None:
    assert violations(source), source


def test_the_rule_lets_pure_tests_and_scripted_runtimes_through() -> None:
    source = (
        "import asyncio, os, threading\n"
        "from tests.integration.runtime_support import Harness, call_item, make_turn\n"
        "from tests.scripted_spawner import ScriptedSpawner\n"
        "async def main(tmp):\n"
        "    async with Harness(tmp, spawner=ScriptedSpawner()) as h:\n"
        "        await asyncio.sleep(0)\n"
        "os.path.join('a', 'b'); os.environ.get('X')\n"
    )
    assert violations(source) == []
