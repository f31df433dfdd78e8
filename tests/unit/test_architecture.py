"""Layering rules: pure stages import no I/O, wire types stay at the edge, modules stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

ROUTER = REPO_ROOT / "server" / "shellgate" / "router"

COMMON = REPO_ROOT / "common" / "shellgate" / "common"
EXECSERVER = REPO_ROOT / "execserver" / "shellgate" / "execserver"
CLIENT = REPO_ROOT / "client" / "shellgate" / "client"
MCP = REPO_ROOT / "mcp" / "shellgate" / "mcp"

# The pipeline stages (STYLE.md convention 1): values in, values out. Whole packages are
# stages, so a module added to one is checked without editing this list.
PURE_PACKAGES = ("decode", "handler", "bash", "display", "output", "policy", "apply_patch")
PURE_MODULES = sorted(
    [
        *(p for pkg in PURE_PACKAGES for p in (ROUTER / pkg).rglob("*.py")
          if p.name != "local_fs.py"),
        *(ROUTER / name for name in (
            "pipeline.py", "projection.py", "envelope.py", "policy_projection.py",
            "approval_identity.py",
        )),
        COMMON / "env_policy.py",
    ]
)  # fmt: skip

FORBIDDEN_IMPORTS = {"grpc", "asyncio", "asyncssh", "subprocess", "socket", "time"}
FORBIDDEN_ATTRS = {("os", "environ"), ("os", "getenv"), ("os", "system"), ("os", "popen")}
# Router modules that may touch generated protobuf code: the wire package and the gRPC
# clients of remote environments.
WIRE_ALLOWED = {
    ROUTER / "service" / "wire", ROUTER / "service" / "server.py", ROUTER / "service" / "app.py",
    ROUTER / "cli" / "project.py", ROUTER / "cli" / "conformance",
    *(ROUTER / "runtime" / "environments" / "remote" / name
      for name in ("environment.py", "fs.py", "process.py", "info.py")),
}  # fmt: skip
# Who may import whom: each source root lists the shellgate packages it must never import.
# The MCP front (mcp → client, common, v1) is a leaf: nothing imports it. The router's CLI
# names `shellgate.mcp.cli` as a string for `shellgate mcp` (a composition root's
# dispatch, test_shellgate_mcp_is_dispatched_not_imported), never as an import.
LAYERS = {
    ROUTER: ("shellgate.execserver", "shellgate.client", "shellgate.mcp"),
    EXECSERVER: ("shellgate.router", "shellgate.client", "shellgate.mcp"),
    COMMON: ("shellgate.router", "shellgate.execserver", "shellgate.client", "shellgate.mcp"),
    CLIENT: ("shellgate.router", "shellgate.execserver", "shellgate.common", "shellgate.mcp"),
    MCP: ("shellgate.router", "shellgate.execserver"),
}
# The router's top level: the seed stages stand out among a few packages (renovation, P5).
ROUTER_TOP_LEVEL_MAX = 16


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
        if any(path == allowed or allowed in path.parents for allowed in WIRE_ALLOWED):
            continue
        if any(name.startswith("shellgate.v1") for name in _imports(ast.parse(path.read_text()))):
            offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []


@pytest.mark.parametrize("root", sorted(LAYERS), ids=lambda p: p.name)
def test_layers_import_only_downwards(root: Path) -> None:
    banned = LAYERS[root]
    offenders = {
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in root.rglob("*.py")
        for name in _imports(ast.parse(path.read_text()))
        if name.startswith(banned)
    }
    assert offenders == set()


def test_shellgate_mcp_is_dispatched_not_imported() -> None:
    from shellgate.router.cli.main import SUBCOMMANDS

    module, _help = SUBCOMMANDS["mcp"]
    assert module == "shellgate.mcp.cli"
    assert (MCP / "cli.py").is_file()
    assert not (CLIENT / "mcp").exists(), "the MCP front lives in mcp/, not in the client"


def test_router_top_level_is_small() -> None:
    entries = [p.name for p in ROUTER.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= ROUTER_TOP_LEVEL_MAX, sorted(entries)


def test_modules_stay_small() -> None:
    limit = 450  # "about 400 lines"; generated stubs excluded
    sizes = {
        str(p.relative_to(REPO_ROOT)): len(p.read_text().splitlines())
        for folder in ("server", "execserver", "common", "client", "mcp")
        for p in (REPO_ROOT / folder).rglob("*.py")
        if "_pb2" not in p.name
    }
    assert {k: v for k, v in sizes.items() if v > limit} == {}
