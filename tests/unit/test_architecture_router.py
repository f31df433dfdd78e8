"""Import rules inside the router (docs/architecture.md, "Where each concept lives").

The runtime never reaches up into the service layer or the CLI, the pure stages never
reach into the runtime or the service, storage adapters never into the flows that use
them, and decoding never into the handler or the policy. Each rule is checked over the
real tree, and shown to fail on a module that breaks it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from shellgate.common.process.local import LocalProcess
from shellgate.router.runtime.environments.remote.process import RemoteProcess
from shellgate.router.runtime.threads.unified_process import ReattachableHandle, UnifiedProcess

from tests.paths import REPO_ROOT

ROUTER = REPO_ROOT / "server" / "shellgate" / "router"
R = "shellgate.router."
PURE = tuple(R + name for name in (
    "decode", "handler", "bash", "display", "output", "policy", "apply_patch", "pipeline",
    "projection", "envelope", "policy_projection", "approval_identity",
))  # fmt: skip
# Storage adapters know records, never the flows that use them.
FLOWS = ("call", "threads", "environments", "runtimes", "approvals.operator_wait")
STORE_NEVER = tuple(R + "runtime." + flow for flow in FLOWS)
# (who, what it must never import): module-name prefixes.
RULES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    ((R + "runtime",), (R + "service", R + "cli")),
    (PURE, (R + "runtime", R + "service", R + "cli")),
    ((R + "runtime.store",), STORE_NEVER),
    ((R + "decode",), (R + "handler", R + "policy")),
)


def _module(path: Path) -> str:
    relative = path.relative_to(REPO_ROOT / "server").with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _imports(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(modules: dict[str, set[str]]) -> list[str]:
    """Every `module: import` that breaks a rule."""
    found = []
    for module, imported in sorted(modules.items()):
        for who, banned in RULES:
            if _under(module, who):
                found += [f"{module}: {name}" for name in sorted(imported) if _under(name, banned)]
    return found


def test_the_router_keeps_its_import_rules() -> None:
    modules = {_module(p): _imports(p.read_text()) for p in ROUTER.rglob("*.py")}
    assert len(modules) > 150
    assert violations(modules) == []


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        (R + "runtime.call.execute", R + "service.app"),
        (R + "runtime.threads.sessions", R + "cli.main"),
        (R + "decode.params", R + "runtime.call.events"),
        (R + "envelope", R + "service.config"),
        (R + "runtime.store.redis_state", R + "runtime.threads.registry"),
        (R + "runtime.store.redis_board", R + "runtime.approvals.operator_wait"),
        (R + "decode.params", R + "handler.plan"),
        (R + "decode", R + "policy.approval_policy"),
    ],
)
def test_each_rule_fails_when_broken(module: str, imported: str) -> None:
    assert violations({module: {imported}}) == [f"{module}: {imported}"]


def test_allowed_directions_pass() -> None:
    allowed = {
        R + "runtime.call.execute": {R + "pipeline", R + "runtime.store.shared_state"},
        R + "runtime.store.redis_board": {R + "runtime.approvals.desk"},
        R + "handler.plan": {R + "decode.workdir", R + "policy.approval_policy"},
        R + "service.app": {R + "runtime.call.execute"},
    }
    assert violations(allowed) == []


def test_reattachable_handles_are_a_protocol_not_getattr() -> None:
    # The daemon's process handle re-attaches and releases; a local process cannot. The
    # capability is the protocol (checked by mypy where the session is built), not getattr.
    assert callable(RemoteProcess.release) and not hasattr(LocalProcess, "release")
    assert "release" in ReattachableHandle.__dict__
    source = (ROUTER / "runtime" / "threads" / "unified_process.py").read_text()
    assert "getattr(" not in source and UnifiedProcess.release.__doc__
