"""Both CLIs as real processes: --version, a bad --log-level in one line, `policy check`'s
console entry point, and Codex's own `execpolicy check` reading the same argv as ours (the
in-process cases: tests/unit/test_cli_help.py, tests/unit/test_policy_check_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from shellgate.router.cli.main import main as router_main

from tests.paths import REPO_ROOT
from tests.unit.test_cli_help import ARGVS
from tests.unit.test_cli_help import RULES as PUSH_RULES
from tests.unit.test_policy_check_cli import RECORDED, RULES

VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
CODEX = REPO_ROOT / ".tools" / "node_modules" / ".bin" / "codex"
ROUTER = [sys.executable, "-m", "shellgate.router.cli.main"]
EXECSERVER = [sys.executable, "-m", "shellgate.execserver.cli"]


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.rules"
    path.write_text(RULES, encoding="utf-8")
    return path


def test_console_entry_point(rules_file: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shellgate.router.cli.main",
            "policy",
            "check",
            "-r",
            str(rules_file),
            "--",
            "rm",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout == RECORDED[3][1]


def test_version_flags_print_the_package_version() -> None:
    for argv, prog in ((ROUTER, "shellgate"), (EXECSERVER, "shellgate-execserver")):
        done = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=30)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{prog} {VERSION}\n", "")


@pytest.mark.parametrize("argv", [ROUTER, EXECSERVER], ids=["router", "execserver"])
def test_bad_log_level_is_one_line_and_exit_2(argv: list[str]) -> None:
    done = subprocess.run(
        [*argv, "serve", "--log-level", "LOUD"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("config error: --log-level: not a log level (got 'LOUD'")
    assert "DEBUG" in done.stderr


@pytest.mark.parametrize(("args", "pushes"), ARGVS, ids=[" ".join(a) for a, _ in ARGVS])
def test_policy_check_reads_the_command_as_codex(
    tmp_path: Path, args: list[str], pushes: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "f.rules"
    rules.write_text(PUSH_RULES, encoding="utf-8")
    assert router_main(["policy", "check", "--rules", str(rules), *args]) == 0
    ours = capsys.readouterr().out
    assert json.loads(ours).get("decision") == ("forbidden" if pushes else None)
    if not CODEX.exists():
        pytest.skip(f"codex CLI not installed at {CODEX}: compared with the recorded meaning only")
    theirs = subprocess.run(
        [str(CODEX), "execpolicy", "check", "--rules", str(rules), *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert (theirs.returncode, theirs.stdout) == (0, ours)
