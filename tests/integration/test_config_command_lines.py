"""Both daemons' command lines refuse a config mistake with exit 2, exactly one stderr line
and no traceback (real processes; moved from tests/unit/test_config_validation.py, whose
rows check the same messages in-process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The real command lines: exit 2, exactly one stderr line, no traceback.
ROUTER = [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--print-port"]
EXECSERVER = [sys.executable, "-m", "shellgate.execserver.cli", "serve", "--print-port"]


COMMAND_LINE_MISTAKES = {
    "router-file-enum": (
        ROUTER,
        '[defaults]\napproval_policy = "sometimes"\n',
        [],
        "config error: defaults.approval_policy: not an allowed value",
    ),
    "router-listen-flag": (
        ROUTER,
        None,
        ["--listen", "localhost"],
        "config error: --listen: must be host:port",
    ),
    "router-rules-dir": (
        ROUTER,
        None,
        ["--rules-dir", "/nonexistent"],
        "config error: --rules-dir: no such directory",
    ),
    "router-log-level": (
        ROUTER,
        None,
        ["--log-level", "loud"],
        "config error: --log-level: not a log level",
    ),
    "execserver-file-enum": (
        EXECSERVER,
        'backend = "SSH"\n',
        [],
        "config error: backend: not an allowed value",
    ),
    "execserver-listen-flag": (
        EXECSERVER,
        None,
        ["--listen", "127.0.0.1:99999"],
        "config error: --listen: must be host:port",
    ),
    "execserver-log-level": (
        EXECSERVER,
        None,
        ["--log-level", "loud"],
        "config error: --log-level: not a log level",
    ),
}


@pytest.mark.parametrize(
    ("command", "toml", "flags", "expected"),
    list(COMMAND_LINE_MISTAKES.values()),
    ids=list(COMMAND_LINE_MISTAKES),
)
def test_the_command_lines_exit_2_with_one_line(
    tmp_path: Path, command: list[str], toml: str | None, flags: list[str], expected: str
) -> None:
    args = list(flags)
    if toml is not None:
        path = tmp_path / "config.toml"
        path.write_text(toml)
        args += ["--config", str(path)]
    result = subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr
