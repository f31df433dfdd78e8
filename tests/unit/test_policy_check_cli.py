"""`shellgate policy check` output against recorded `codex execpolicy check` expectations
(in-process; the console entry point as a process: tests/integration/test_cli_processes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shellgate.router.cli.main import main

RULES = """
prefix_rule(pattern=["git", ["status", "log"]], decision="prompt", justification="x")
prefix_rule(pattern=["rm"], decision="forbidden")
host_executable(name="git", paths=["/usr/bin/git"])
"""

# (args after --rules FILE, expected stdout) as printed by codex 0.169.0 for the same file.
RECORDED = [
    (
        ["--resolve-host-executables", "--", "/usr/bin/git", "status"],
        '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","status"],"decision":"prompt",'
        '"resolvedProgram":"/usr/bin/git","justification":"x"}}],"decision":"prompt"}\n',
    ),
    (["--", "/usr/bin/git", "status"], '{"matchedRules":[]}\n'),
    (["--", "bash", "-lc", "rm -rf x"], '{"matchedRules":[]}\n'),
    (
        ["--", "rm", "-rf", "x"],
        '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["rm"],"decision":"forbidden"}}],'
        '"decision":"forbidden"}\n',
    ),
    (
        ["--pretty", "--", "git", "log", "x"],
        '{\n  "matchedRules": [\n    {\n      "prefixRuleMatch": {\n        "matchedPrefix": [\n'
        '          "git",\n          "log"\n        ],\n        "decision": "prompt",\n'
        '        "justification": "x"\n      }\n    }\n  ],\n  "decision": "prompt"\n}\n',
    ),
]


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.rules"
    path.write_text(RULES, encoding="utf-8")
    return path


@pytest.mark.parametrize(("args", "expected"), RECORDED)
def test_output_matches_recording(
    rules_file: Path, args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["policy", "check", "--rules", str(rules_file), *args]) == 0
    assert capsys.readouterr().out == expected


def test_broken_file_exits_1_with_rendering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.rules"
    path.write_text("prefix_rule(pattern=[])\n", encoding="utf-8")
    assert main(["policy", "check", "--rules", str(path), "--", "ls"]) == 1
    err = capsys.readouterr().err
    assert f"Error: failed to parse policy at {path}" in err
    assert "error: invalid pattern element: pattern cannot be empty" in err
    assert f"{path}:1: error: invalid pattern element" in err
