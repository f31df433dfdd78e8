"""Codex CLI 0.169.0 as a real MCP client of `shellgate mcp` (stdio), on a scripted model.

The product's scripted Responses endpoint (`codex/scripted_model`, as `codex-check` uses) plays the model: its first answer calls the MCP
exec_command tool Codex lists for the `shellgate` server; the request after that carries
the tool output Codex recorded, which must be shellgate's exec_command text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from shellgate.execserver.codex.scripted_model import (
    ScriptedResponses,
    final_message,
    function_call,
    stream,
    tool_outputs,
)

from tests.paths import REPO_ROOT

CODEX = REPO_ROOT / ".tools" / "node_modules" / ".bin" / "codex"
pytestmark = [
    pytest.mark.external,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not CODEX.exists(),
        reason=f"codex CLI not installed at {CODEX} (cd .tools && npm install @openai/codex@0.169.0)",
    ),
]
MARK = "shellgate-over-mcp"
_WAITS = 20


def _script(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model: call the MCP exec_command once, then say done."""
    # Codex 0.169 lists an MCP server's tools in a namespace, `mcp__<server>`.
    namespace = next((t for t in body.get("tools", []) if isinstance(t, dict)
                      and t.get("type") == "namespace" and t.get("name") == "mcp__shellgate"),
                     None)  # fmt: skip
    names = [t.get("name") for t in (namespace or {}).get("tools", [])]
    tool = "exec_command" if "exec_command" in names else None
    outputs = [i.get("call_id") for i in tool_outputs(body)]
    if tool is not None and "mcp1" not in outputs:
        item = function_call(tool, "mcp1", {"cmd": f"echo {MARK}"})
        return stream({**item, "namespace": "mcp__shellgate"})
    if tool is None and len(outputs) < _WAITS:
        # Codex starts MCP servers in the background: until shellgate's tools are
        # listed, the model waits with Codex's own exec_command.
        return stream(function_call("exec_command", f"wait{len(outputs)}", {"cmd": "sleep 1"}))
    return stream(final_message())


def _config(base_url: str, cwd: Path) -> str:
    args = ["-m", "shellgate.router.cli.main", "mcp", "--sandbox", "danger-full-access",
            "--cwd", str(cwd)]  # fmt: skip
    return (
        'model = "gpt-5.1-codex"\nmodel_provider = "scripted"\n'
        'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
        # Codex 0.169 defers MCP tools to its tool search by default; list them up front.
        "[features]\ntool_search_always_defer_mcp_tools = false\n"
        "[model_providers.scripted]\n"
        f'name = "scripted"\nbase_url = "{base_url}"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
        "[mcp_servers.shellgate]\n"
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
        # required: Codex waits for the server (and fails the run if it cannot start).
        "required = true\nstartup_timeout_sec = 60\ntool_timeout_sec = 60\n"
        f"env = {{ PYTHONPATH = {json.dumps(os.environ.get('PYTHONPATH', ''))} }}\n"
    )


def test_codex_calls_shellgate_exec_command_over_mcp(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    env = {**os.environ, "CODEX_HOME": str(home), "SCRIPTED_API_KEY": "dummy",
           "SHELL": "/bin/bash", "RUST_LOG": os.environ.get("MCP_TEST_RUST_LOG", "error"), "NO_COLOR": "1"}  # fmt: skip
    with ScriptedResponses(_script) as model:
        (home / "config.toml").write_text(_config(model.base_url, cwd))
        done = subprocess.run(
            [str(CODEX), "exec", "--skip-git-repo-check", "run the command"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        bodies = model.bodies
    outputs = [i for body in bodies for i in tool_outputs(body) if i.get("call_id") == "mcp1"]
    (tmp_path / "codex.stderr").write_text(done.stdout + done.stderr)
    assert outputs, (done.returncode, str(tmp_path), [b.get("tools") for b in bodies][:1])
    text = json.dumps(outputs[0].get("output"))
    assert "Process exited with code 0" in text and MARK in text, text
