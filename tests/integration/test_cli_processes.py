"""The CLIs as real processes: `python -m shellgate.router.cli.main policy check` prints what
the recording says (the in-process cases: tests/unit/test_policy_check_cli.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_policy_check_cli import RECORDED, RULES


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
