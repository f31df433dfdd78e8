"""`shellgate mcp` refuses a token file it cannot use in one line (exit 2), before it starts
anything: `--token-file` (the router's token) and `--http-token-file` (the HTTP callers').
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.mcp_support import MCP

pytestmark = pytest.mark.timeout(60)


def _unusable(root: Path) -> dict[str, tuple[Path, str]]:
    """Paths no token can be read from, and the words the refusal says about each."""
    folder = root / "a-folder"
    folder.mkdir()
    binary = root / "binary.token"
    binary.write_bytes(b"\xff\xfe\x00token\n")
    cases = {
        "missing": (root / "missing.token", "No such file or directory"),
        "folder": (folder, "Is a directory"),
        "binary": (binary, "not a text file"),
    }
    if os.geteuid() != 0:  # root reads a 0000 file anyway
        locked = root / "locked.token"
        locked.write_text("tok\n")
        locked.chmod(0)
        cases["locked"] = (locked, "Permission denied")
    return cases


def _refusal(args: list[str], cwd: Path) -> str:
    """The stderr of `shellgate mcp ARGS`, which must exit 2 at once with one line."""
    proc = subprocess.run([*MCP, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=50, check=False)  # fmt: skip
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    # One line: no private router started (its banner would follow on stderr).
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr.strip()


@pytest.mark.parametrize("mode", [[], ["--router", "127.0.0.1:9"]], ids=["private", "router"])
def test_an_unusable_token_file_is_one_line(tmp_path: Path, mode: list[str]) -> None:
    for path, words in _unusable(tmp_path).values():
        line = _refusal([*mode, "--token-file", str(path)], tmp_path)
        assert line.startswith("shellgate mcp: --token-file: "), line
        assert str(path) in line and words in line, line


def test_an_unusable_http_token_file_is_one_line(tmp_path: Path) -> None:
    for path, words in _unusable(tmp_path).values():
        line = _refusal(["--http", "127.0.0.1:0", "--http-token-file", str(path)], tmp_path)
        assert line.startswith("shellgate mcp: --http-token-file: "), line
        assert str(path) in line and words in line, line
    # A readable file with no token in it is refused the same way (the router's parser).
    empty = tmp_path / "empty.token"
    empty.write_text("# nothing yet\n")
    line = _refusal(["--http", "127.0.0.1:0", "--http-token-file", str(empty)], tmp_path)
    assert line == f"shellgate mcp: --http-token-file: {empty}: no tokens", line
