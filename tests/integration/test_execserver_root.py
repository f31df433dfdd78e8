"""`--root` (`root`) must be a directory: a daemon whose every command would fail to start refuses."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

EXECSERVER = [sys.executable, "-m", "shellgate.execserver.cli"]
START_TIMEOUT_S = 30


def _refusal(args: list[str]) -> str:
    """Run the command line to its exit (stdin closed); the one stderr line it printed."""
    done = subprocess.run(
        [*EXECSERVER, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=START_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "codex-stdio"])
def test_a_missing_root_flag_is_refused(command: str) -> None:
    """`serve --root /nonexistent` (and codex-stdio's) exits 2 naming the flag, not serving."""
    extra = ["--listen", "127.0.0.1:0", "--print-port"] if command == "serve" else []
    # A short path: the refusal clips long values (`…`), and tmp_path's length varies.
    with tempfile.TemporaryDirectory(prefix="r", dir="/tmp") as short:
        missing = str(Path(short) / "nonexistent")
        line = _refusal([command, *extra, "--root", missing])
    assert line.startswith("config error: --root: no such directory"), line
    assert missing in line


@pytest.mark.parametrize("command", ["serve", "codex-stdio"])
def test_a_root_that_is_a_file_is_refused_from_the_config(command: str, tmp_path: Path) -> None:
    """`root = "<a file>"` in the config file: the same refusal, naming the key."""
    a_file = tmp_path / "file"
    a_file.write_text("x")
    config = tmp_path / "execserver.toml"
    config.write_text(f'root = "{a_file}"\n', encoding="utf-8")
    extra = ["--listen", "127.0.0.1:0", "--print-port"] if command == "serve" else []
    line = _refusal([command, *extra, "--config", str(config)])
    assert line.startswith("config error: root: no such directory"), line
