"""`shellgate-client` alone: its wheel installs into a fresh venv without any server
dependency, imports, type-checks a harness with mypy --strict, and talks to a real router.

The wheel is built from client/ (pip, hatchling from the package index); the venv gets its
dependencies from the index too (pip's cache makes repeated runs quick).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

pytestmark = pytest.mark.slow

EXAMPLE = REPO_ROOT / "client" / "examples" / "python" / "harness.py"
# What `pip install shellgate-client` may bring: the client, grpc, protobuf and their own deps.
ALLOWED = {"shellgate-client", "grpcio", "grpcio-status", "protobuf", "googleapis-common-protos",
           "typing-extensions", "pip", "setuptools", "wheel"}  # fmt: skip
SERVER_ONLY = {"shellgate", "asyncssh", "redis", "tree-sitter", "tree-sitter-bash",
               "grpcio-reflection", "grpcio-health-checking", "cryptography"}  # fmt: skip


def _clean_env() -> dict[str, str]:
    # PYTHONPATH points at the checkout: the venv must see only what it installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str], cwd: Path, timeout: float = 300) -> str:
    proc = subprocess.run(args, cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with only the shellgate-client wheel (and its dependencies) installed."""
    root = tmp_path_factory.mktemp("client-dist")
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
          str(REPO_ROOT / "client")], root)  # fmt: skip
    [wheel] = dist.glob("shellgate_client-*.whl")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], root)
    yield python


def _installed(python: Path) -> set[str]:
    out = _run([str(python), "-m", "pip", "list", "--format", "json"], python.parent)
    return {entry["name"].lower().replace("_", "-") for entry in json.loads(out)}


def test_installs_without_server_dependencies(client_venv: Path) -> None:
    installed = _installed(client_venv)
    assert "shellgate-client" in installed and "grpcio" in installed
    assert not installed & SERVER_ONLY, installed & SERVER_ONLY
    assert installed <= ALLOWED, installed - ALLOWED


def test_imports_the_client_and_stubs_but_no_server_code(client_venv: Path) -> None:
    probe = (
        "import importlib.util, shellgate.client, shellgate.v1.router_pb2 as r\n"
        "print(shellgate.client.__file__)\n"
        "print(sorted(r.DESCRIPTOR.services_by_name))\n"
        "print([m for m in ('shellgate.router', 'shellgate.common', 'shellgate.execserver')"
        " if importlib.util.find_spec(m) is not None])\n"
    )
    where, services, server = _run([str(client_venv), "-c", probe], client_venv.parent
                                   ).splitlines()  # fmt: skip
    assert where.startswith(str(client_venv.parent.parent)), where  # the venv's copy
    assert services == "['ToolRouterService']"
    assert server == "[]"


def test_ships_no_mcp_front(client_venv: Path) -> None:
    # The MCP front is a server (its own source root, mcp/, in the `shellgate` distribution
    # under the [mcp] extra): this wheel declares none of its dependencies, so it has none
    # of its code either.
    [wheel] = (client_venv.parents[2] / "dist").glob("shellgate_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = sorted({name.split("/")[1] for name in names if name.startswith("shellgate/")})
    assert packages == ["client", "v1"], packages
    assert not [name for name in names if "/mcp/" in name or name.startswith("mcp/")]
    probe = ("import importlib.util\n"
             "print([m for m in ('shellgate.mcp', 'shellgate.client.mcp', 'mcp')"
             " if importlib.util.find_spec(m) is not None])\n")  # fmt: skip
    assert _run([str(client_venv), "-c", probe], client_venv.parent).strip() == "[]"


def test_example_type_checks_with_mypy_strict(client_venv: Path, tmp_path: Path) -> None:
    # The stub packages for grpc/protobuf come with the `typing` extra, as the README says.
    _run([str(client_venv), "-m", "pip", "install", "-q", "types-protobuf", "grpc-stubs"],
         tmp_path)  # fmt: skip
    (tmp_path / "harness.py").write_text(EXAMPLE.read_text())
    # A call with a wrong type must be reported: proof the client's types are really seen.
    (tmp_path / "wrong.py").write_text(
        "from shellgate.client import write_stdin_item\nwrite_stdin_item('not-an-int')\n")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
            "--python-executable", str(client_venv)]  # fmt: skip
    _run([*mypy, "harness.py"], tmp_path)
    wrong = subprocess.run([*mypy, "wrong.py"], cwd=tmp_path, env=_clean_env(),
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert wrong.returncode == 1 and 'incompatible type "str"' in wrong.stdout, wrong.stdout


def test_example_runs_against_a_real_router(client_venv: Path, tmp_path: Path) -> None:
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        out = _run([str(client_venv), str(EXAMPLE), f"127.0.0.1:{port}", str(tmp_path)],
                   tmp_path, timeout=60)  # fmt: skip
    assert out.startswith("router ")
    # The first chunk may or may not hold "started"; the write_stdin poll ends with the exit.
    assert 0 <= out.index("started\n") < out.index("finished\n")
    assert "Process running with session ID" in out and "Process exited with code 0" in out
    assert (tmp_path / "hello.txt").read_text() == "hello from apply_patch\n"
