"""`shellgate project` and `shellgate eval` as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

ITEM = {
    "type": "function_call",
    "name": "exec_command",
    "arguments": json.dumps({"cmd": "git status && just test", "workdir": "sub"}),
    "call_id": "c1",
}


def _project(item: dict[str, Any] | str, cwd: Path, *extra: str) -> dict[str, Any]:
    text = item if isinstance(item, str) else json.dumps(item)
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "project", "--item", text, *extra],
        cwd=cwd, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _user_shell() -> str:
    shell = pwd.getpwuid(os.getuid()).pw_shell
    return shell if shell in ("/bin/bash", "/usr/bin/bash", "/bin/zsh", "/bin/sh") else "/bin/bash"


def test_exec_command_projects_login_shell_argv_and_joined_cwd(tmp_path: Path) -> None:
    out = _project(ITEM, tmp_path)
    command = out["shell"]["elements"][0]["command"]
    assert command["handler_argv"] == [_user_shell(), "-lc", "git status && just test"]
    assert command["cwd"] == str(tmp_path / "sub")
    assert command["sandbox_cwd"] == str(tmp_path)
    words = [c["words"] for c in command["policy"]["commands"]]
    assert words == [["git", "status"], ["just", "test"]]


def test_login_false_gives_dash_c(tmp_path: Path) -> None:
    item = dict(ITEM, arguments=json.dumps({"cmd": "ls", "login": False}))
    command = _project(item, tmp_path)["shell"]["elements"][0]["command"]
    assert command["handler_argv"][1:] == ["-c", "ls"]


def test_sequence_cmd_is_the_serde_error_text(tmp_path: Path) -> None:
    item = dict(ITEM, arguments='{"cmd": ["ls"]}')
    assert _project(item, tmp_path)["tool_error"]["text"] == (
        "failed to parse function arguments: invalid type: sequence, expected a string "
        "at line 1 column 8"
    )


def test_seed_heredoc_experiment_with_rules_file(tmp_path: Path) -> None:
    rules = tmp_path / "p.rules"
    rules.write_text('prefix_rule(pattern=["python3"], decision="allow")\n')
    turn = tmp_path / "turn.json"
    turn.write_text(json.dumps({
        "approval_policy": {"kind": "APPROVAL_POLICY_KIND_ON_REQUEST"},
        "permission_profile": {"kind": "PERMISSION_PROFILE_KIND_READ_ONLY"},
    }))  # fmt: skip
    item = dict(ITEM, arguments=json.dumps({"cmd": "python3 <<'PY'\nprint('hello')\nPY"}))
    command = _project(item, tmp_path, "--turn", str(turn), "--rules", str(rules))["shell"][
        "elements"
    ][0]["command"]
    assert [c["words"] for c in command["policy"]["commands"]] == [["python3"]]
    assert command["policy"]["used_complex_parsing"] is True
    assert command["requirement"] == {"skip": {"bypass_sandbox": True}}


def test_remote_environment_from_the_turn_file_runs_its_reported_shell(tmp_path: Path) -> None:
    turn = tmp_path / "turn.json"
    turn.write_text(json.dumps({
        "turn": {"environments": [{"environment_id": "build1", "cwd": "/srv/repo"}]},
        "environments": [{"id": "build1", "remote": True, "cwd": "/srv",
                          "shell": {"name": "zsh", "path": "/usr/bin/zsh"}}],
    }))  # fmt: skip
    item = dict(ITEM, arguments=json.dumps({"cmd": "ls", "shell": "bash"}))
    out = _project(item, tmp_path, "--turn", str(turn))
    assert out["tool_error"]["text"] == "environment `build1` only supports `zsh`"
    item = dict(ITEM, arguments=json.dumps({"cmd": "ls"}))
    command = _project(item, tmp_path, "--turn", str(turn))["shell"]["elements"][0]["command"]
    assert command["handler_argv"] == ["/usr/bin/zsh", "-lc", "ls"]
    assert command["remote"] is True and command["cwd"] == "/srv/repo"


def test_bad_input_is_a_clean_cli_error(tmp_path: Path) -> None:
    bad_turn = tmp_path / "turn.json"
    bad_turn.write_text("{not json")
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "project", "--item", "{}", "--turn", str(bad_turn)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("shellgate project: invalid turn")


def test_eval_answers_every_line_in_order_even_bad_ones() -> None:
    lines = ['{"fn":"detect_shell_type","input":"bash"}', "not json", '{"fn":"nope","input":1}', ""]
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "eval"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0] == {"output": "bash"}
    assert answers[1]["error"].startswith("invalid input: ")
    assert answers[2] == {"error": "unknown fn nope"}
    assert len(answers) == 4
