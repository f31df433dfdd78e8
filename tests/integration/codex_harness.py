"""Shared pieces for running the real Codex binary against a scripted Responses endpoint.

The endpoint lives on 127.0.0.1 and answers every `POST /v1/responses` with one SSE stream
chosen by a `script` callable from the request body; every body is recorded so a test can
compare what Codex sent back to the model (its `function_call_output` items).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CODEX_VERSION = "0.169.0"
Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
_USAGE = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
          "output_tokens_details": None, "total_tokens": 2}  # fmt: skip


def find_codex() -> Path | None:
    """The pinned codex binary (the repo's .tools install or PATH), None when absent."""
    for root in (Path(__file__).resolve().parents[2], Path("/work/main")):
        candidate = root / ".tools" / "node_modules" / ".bin" / "codex"
        if candidate.exists():
            return candidate
    found = shutil.which("codex")
    return Path(found) if found else None


def codex_version(codex: Path) -> str:
    """`codex --version`'s number."""
    out = subprocess.run([str(codex), "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip().rsplit(" ", 1)[-1]


def stream(item: dict[str, Any]) -> list[dict[str, Any]]:
    """One Responses SSE stream carrying one output item."""
    return [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"id": "r", "usage": _USAGE}},
    ]


def final_message(text: str = "done") -> dict[str, Any]:
    """A plain assistant message item (ends the turn)."""
    return {"type": "message", "role": "assistant", "id": "m",
            "content": [{"type": "output_text", "text": text}]}  # fmt: skip


def function_call(name: str, call_id: str, args: dict[str, Any]) -> dict[str, Any]:
    """A function_call item."""
    return {"type": "function_call", "name": name, "call_id": call_id,
            "arguments": json.dumps(args)}  # fmt: skip


def custom_call(name: str, call_id: str, text: str) -> dict[str, Any]:
    """A custom (freeform) tool call item, e.g. apply_patch."""
    return {"type": "custom_tool_call", "name": name, "call_id": call_id, "input": text}


class _ResponsesHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedResponses

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output shows results, not the access log."""

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        """Model listings: none (Codex falls back to its default metadata)."""
        self._send(200, "application/json", b'{"data":[],"models":[]}')

    def do_POST(self) -> None:
        """POST /v1/responses: one scripted SSE stream."""
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.bodies.append(body)
        events = self.server.script(body)
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, "text/event-stream", sse.encode())


class ScriptedResponses(ThreadingHTTPServer):
    """The scripted model on 127.0.0.1 (records every request body)."""

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _ResponsesHandler)
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server_address[1])

    def close(self) -> None:
        """Stop serving."""
        self.shutdown()
        self.server_close()


def write_config(home: Path, port: int, extra: str = "", model: str = "gpt-5.1-codex") -> None:
    """A CODEX_HOME config.toml whose model provider is the scripted endpoint on `port`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "oracle"\n'
        + extra
        + "[model_providers.oracle]\n"
        f'name = "oracle"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\nenv_key = "ORACLE_API_KEY"\n',
        encoding="utf-8",
    )


def codex_env(home: Path) -> dict[str, str]:
    """The environment codex runs with (temp CODEX_HOME, dummy key, quiet logs)."""
    return {**os.environ, "CODEX_HOME": str(home), "ORACLE_API_KEY": "dummy",
            "SHELL": "/bin/bash", "RUST_LOG": "error", "NO_COLOR": "1"}  # fmt: skip
