"""Codex CLI 0.169.0 as a real MCP client of `shellgate mcp` (stdio), on a scripted model.

A Responses endpoint on loopback plays the model: its first answer calls the MCP
exec_command tool Codex lists for the `shellgate` server; the request after that carries
the tool output Codex recorded, which must be shellgate's exec_command text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

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


def _usage() -> dict[str, Any]:
    return {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
            "output_tokens_details": None, "total_tokens": 2}  # fmt: skip


class _Model(BaseHTTPRequestHandler):
    """The scripted model: call the MCP exec_command once, then say done."""

    protocol_version = "HTTP/1.1"
    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        """No model listing."""
        self._send(200, "application/json", b'{"data":[],"models":[]}')

    def do_POST(self) -> None:
        """One scripted SSE stream."""
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        type(self).bodies.append(body)
        # Codex 0.169 lists an MCP server's tools in a namespace, `mcp__<server>`.
        namespace = next((t for t in body.get("tools", []) if isinstance(t, dict)
                          and t.get("type") == "namespace" and t.get("name") == "mcp__shellgate"),
                         None)  # fmt: skip
        names = [t.get("name") for t in (namespace or {}).get("tools", [])]
        tool = "exec_command" if "exec_command" in names else None
        outputs = [i.get("call_id") for i in body.get("input", [])
                   if isinstance(i, dict) and i.get("type") == "function_call_output"]  # fmt: skip
        item: dict[str, Any] = {"type": "message", "role": "assistant", "id": "m",
                                "content": [{"type": "output_text", "text": "done"}]}  # fmt: skip
        if tool is not None and "mcp1" not in outputs:
            args = json.dumps({"cmd": f"echo {MARK}"})
            item = {"type": "function_call", "namespace": "mcp__shellgate", "name": tool,
                    "call_id": "mcp1", "arguments": args}  # fmt: skip
        elif tool is None and len(outputs) < _WAITS:
            # Codex starts MCP servers in the background: until shellgate's tools are
            # listed, the model waits with Codex's own exec_command.
            args = json.dumps({"cmd": "sleep 1"})
            item = {"type": "function_call", "name": "exec_command",
                    "call_id": f"wait{len(outputs)}", "arguments": args}  # fmt: skip
        events = [{"type": "response.created", "response": {"id": "r"}},
                  {"type": "response.output_item.done", "item": item},
                  {"type": "response.completed", "response": {"id": "r", "usage": _usage()}}]  # fmt: skip
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, "text/event-stream", sse.encode())


def _config(port: int, cwd: Path) -> str:
    args = ["-m", "shellgate.router.cli.main", "mcp", "--sandbox", "danger-full-access",
            "--cwd", str(cwd)]  # fmt: skip
    return (
        'model = "gpt-5.1-codex"\nmodel_provider = "scripted"\n'
        'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
        # Codex 0.169 defers MCP tools to its tool search by default; list them up front.
        "[features]\ntool_search_always_defer_mcp_tools = false\n"
        "[model_providers.scripted]\n"
        f'name = "scripted"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
        "[mcp_servers.shellgate]\n"
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
        # required: Codex waits for the server (and fails the run if it cannot start).
        "required = true\nstartup_timeout_sec = 60\ntool_timeout_sec = 60\n"
        f"env = {{ PYTHONPATH = {json.dumps(os.environ.get('PYTHONPATH', ''))} }}\n"
    )


def test_codex_calls_shellgate_exec_command_over_mcp(tmp_path: Path) -> None:
    _Model.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (home / "config.toml").write_text(_config(server.server_address[1], cwd))
    env = {**os.environ, "CODEX_HOME": str(home), "SCRIPTED_API_KEY": "dummy",
           "SHELL": "/bin/bash", "RUST_LOG": os.environ.get("MCP_TEST_RUST_LOG", "error"), "NO_COLOR": "1"}  # fmt: skip
    try:
        done = subprocess.run(
            [str(CODEX), "exec", "--skip-git-repo-check", "run the command"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    outputs = [i for body in _Model.bodies for i in body.get("input", [])
               if isinstance(i, dict) and i.get("type") == "function_call_output"
               and i.get("call_id") == "mcp1"]  # fmt: skip
    (tmp_path / "codex.stderr").write_text(done.stdout + done.stderr)
    assert outputs, (done.returncode, str(tmp_path), [b.get("tools") for b in _Model.bodies][:1])
    text = json.dumps(outputs[0].get("output"))
    assert "Process exited with code 0" in text and MARK in text, text
