"""Layering rules: pure stages import no I/O, wire types stay at the edge, modules stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

ROUTER = REPO_ROOT / "server" / "shellgate" / "router"

# The pipeline stages (STYLE.md convention 1): values in, values out.
PURE_MODULES = sorted(
    [
        *ROUTER.glob("decode*.py"),
        *ROUTER.glob("json_*.py"),
        *ROUTER.glob("display*.py"),
        *ROUTER.glob("policy/*.py"),
        *[p for p in ROUTER.glob("apply_patch/*.py") if p.name != "local_fs.py"],
        *(
            ROUTER / name
            for name in (
                "handler.py", "environments.py", "permissions.py", "shells.py", "tools.py",
                "tool_schemas.py", "workdir.py", "envelope.py", "policy_projection.py",
                "word_lowering.py", "literal_words.py", "literal_scan.py", "heredoc_prefix.py",
                "segments.py", "script_cache.py", "approval_identity.py", "shlex_rs.py",
                "output.py", "output_format.py", "head_tail.py", "unified.py", "pipeline.py",
                "projection.py", "bash_parse.py",
            )
        ),
        REPO_ROOT / "execserver" / "shellgate" / "execserver" / "env_policy.py",
    ]
)  # fmt: skip

FORBIDDEN_IMPORTS = {"grpc", "asyncio", "asyncssh", "subprocess", "socket", "time"}
FORBIDDEN_ATTRS = {("os", "environ"), ("os", "getenv"), ("os", "system"), ("os", "popen")}
WIRE_ALLOWED = {
    "servicer.py", "wire_turn.py", "wire_projection.py", "wire_events.py", "project_cli.py",
    "server.py", "app.py", "remote.py", "remote_fs.py",
}  # fmt: skip


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE_MODULES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_pure_stage_imports_no_io(path: Path) -> None:
    assert path.exists(), f"{path} listed as a stage but missing"
    tree = ast.parse(path.read_text())
    roots = {name.split(".")[0] for name in _imports(tree)}
    assert not roots & FORBIDDEN_IMPORTS, f"{path.name} imports {roots & FORBIDDEN_IMPORTS}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) not in FORBIDDEN_ATTRS, (
                f"{path.name} uses {node.value.id}.{node.attr}"
            )


def test_wire_types_stay_at_the_edge() -> None:
    offenders = []
    for path in ROUTER.rglob("*.py"):
        if path.name in WIRE_ALLOWED or "conformance" in path.parts:
            continue
        if any(name.startswith("shellgate.v1") for name in _imports(ast.parse(path.read_text()))):
            offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []


def test_client_depends_only_on_the_contract() -> None:
    for path in (REPO_ROOT / "client" / "shellgate" / "client").rglob("*.py"):
        imported = _imports(ast.parse(path.read_text()))
        bad = {n for n in imported if n.startswith(("shellgate.router", "shellgate.execserver"))}
        assert not bad, f"{path.name} imports {bad}"


def test_modules_stay_small() -> None:
    limit = 450  # "about 400 lines"; generated stubs excluded
    sizes = {
        str(p.relative_to(REPO_ROOT)): len(p.read_text().splitlines())
        for folder in ("server", "execserver", "client")
        for p in (REPO_ROOT / folder).rglob("*.py")
        if "_pb2" not in p.name
    }
    assert {k: v for k, v in sizes.items() if v > limit} == {}
