"""The command lines docs/reliability.md and the README print for other clients, run as
written (only the port is the test router's) against a default router — the one that
generates its local token — so a doc that forgets the token fails here.

`buf curl` (npm @bufbuild/buf in .tools) and `python -m tests.load.loadgen` run; grpcurl and
ghz are not installed on this project's machines, and their lines send the same header.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

BUF = os.environ.get("SHELLGATE_BUF") or str(REPO_ROOT / ".tools/node_modules/.bin/buf")
if not Path(BUF).exists():
    BUF = shutil.which("buf") or ""
DEFAULT = "127.0.0.1:50051"
# What `-d @request.json` sends: an Execute of `echo hi` in the local environment.
EXECUTE_REQUEST = {
    "threadId": "docs",
    "turn": {"environments": [{"environmentId": "local"}]},
    "item": {"rawJson": json.dumps({
        "type": "function_call", "name": "exec_command", "call_id": "c1",
        "arguments": json.dumps({"cmd": "echo hi", "login": False}),
    })},
}  # fmt: skip


def sh_blocks(path: Path) -> list[list[str]]:
    """Every ```sh block of a Markdown file, as logical lines (continuations joined)."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", "", body)
        blocks.append([line for line in joined.splitlines() if line.strip()])
    return blocks


def block_with(path: Path, needle: str) -> list[str]:
    """The one ```sh block holding `needle`."""
    found = [block for block in sh_blocks(path) if any(needle in line for line in block)]
    assert len(found) == 1, (path, needle, found)
    return found[0]


@pytest.fixture
def router(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """(address, a cwd with request.json and a PATH dir): a default router, private runtime dir."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (("shellgate", "-m shellgate.router.cli.main"), ("python", "")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" {target} "$@"\n')
        (bin_dir / name).chmod(0o755)
    if BUF:
        (bin_dir / "buf").symlink_to(BUF)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "request.json").write_text(json.dumps(EXECUTE_REQUEST))
    args = ["--sandbox", "danger-full-access", "--log-level", "WARNING"]
    with router_subprocess(args, local_token=True) as (_proc, port):
        yield f"127.0.0.1:{port}", tmp_path


def run_line(auth: str, line: str, address: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`AUTH=…; LINE` in bash, on the test router's port (the AUTH line's own comment says how)."""
    auth = auth.replace("$(shellgate token)", f"$(shellgate token --target {address})")
    script = f"set -e\n{auth}\n{line.replace(DEFAULT, address)}\n"
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def _auth_line(block: list[str]) -> str:
    [auth] = [line for line in block if line.startswith("AUTH=")]
    assert "$(shellgate token)" in auth, auth
    return auth


@pytest.mark.skipif(not BUF, reason="buf CLI not installed (npm @bufbuild/buf in .tools)")
def test_reliability_buf_curl_lines_work_against_a_default_router(
    router: tuple[str, Path],
) -> None:
    address, cwd = router
    block = block_with(REPO_ROOT / "docs" / "reliability.md", "buf curl")
    auth = _auth_line(block)
    lines = [line for line in block if line.startswith("buf curl")]
    assert len(lines) == 4, lines
    outputs = []
    for line in lines:
        done = run_line(auth, line, address, cwd)
        assert done.returncode == 0, (line, done.stderr)
        outputs.append(done.stdout)
    listed, health, tools, execute = outputs
    # Without the token, reflection would list only health and reflection.
    assert "shellgate.v1.ToolRouterService" in listed.split()
    assert json.loads(health) == {"status": "SERVING"}
    assert json.loads(tools)["tools"]
    assert '"completed"' in execute and "hi\\n" in execute


@pytest.mark.skipif(not BUF, reason="buf CLI not installed (npm @bufbuild/buf in .tools)")
def test_readme_buf_curl_line_works_against_a_default_router(router: tuple[str, Path]) -> None:
    address, cwd = router
    block = block_with(REPO_ROOT / "README.md", "buf curl")
    auth = _auth_line(block)
    [line] = [line for line in block if line.startswith("buf curl")]
    done = run_line(auth, line, address, cwd)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tools"]


def test_reliability_loadgen_line_finds_the_token_itself(router: tuple[str, Path]) -> None:
    address, _cwd = router
    block = block_with(REPO_ROOT / "docs" / "reliability.md", "tests.load.loadgen")
    [line] = [line for line in block if "tests.load.loadgen" in line]
    assert "--token" not in line
    # Fewer calls than printed (two shared cores); the token is what is tested.
    small = line.replace("--project 1000 --execute 200", "--project 20 --execute 5")
    assert small != line, line
    done = subprocess.run(["bash", "-c", small.replace(DEFAULT, address)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["project"]["codes"] == {"OK": 20}
    assert report["execute"]["codes"] == {"OK": 5}
