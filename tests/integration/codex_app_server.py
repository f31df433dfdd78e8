"""Ask the real Codex binary which execpolicy amendment it proposes, via `codex app-server`.

A scripted Responses endpoint on loopback plays the model: for a user message
`ORACLE <json>` it answers one `function_call` item (the tool call in the JSON), and once
the tool output is back it answers a plain assistant message. When Codex asks for approval
(e.g. on-request with `require_escalated`), the app-server sends the client an
`item/commandExecution/requestApproval` request carrying
`proposedExecpolicyAmendment`, which is what Codex would offer as a permanent allow rule.
The oracle declines (nothing runs) and moves on; one codex process serves every question.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ORACLE_PREFIX = "ORACLE "
APPROVAL_METHOD = "item/commandExecution/requestApproval"
REPLY_TIMEOUT_S = 60.0


def _user_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def scripted_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses stream answering one request: the asked tool call, or a final message."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    users = [n for n, i in enumerate(items) if i.get("role") == "user"]
    last = users[-1] if users else -1
    text = _user_text(items[last]) if users else ""
    answered = any(i.get("type") == "function_call_output" for i in items[last + 1 :])
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r"}}]
    if text.startswith(ORACLE_PREFIX) and not answered:
        spec = json.loads(text[len(ORACLE_PREFIX) :])
        item = {"type": "function_call", "name": spec["name"], "call_id": spec["call_id"],
                "arguments": json.dumps(spec["args"])}  # fmt: skip
    else:
        item = {"type": "message", "role": "assistant", "id": "m",
                "content": [{"type": "output_text", "text": "done"}]}  # fmt: skip
    events.append({"type": "response.output_item.done", "item": item})
    usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
             "output_tokens_details": None, "total_tokens": 2}  # fmt: skip
    events.append({"type": "response.completed", "response": {"id": "r", "usage": usage}})
    return events


class _ResponsesHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output shows the table, not the access log."""

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
        events = scripted_events(body)
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, "text/event-stream", sse.encode())


@dataclass(frozen=True)
class Proposal:
    """Codex's answer for one call: whether it asked, and the amendment it offered."""

    asked: bool
    amendment: tuple[str, ...] | None


class CodexAppServer:
    """One `codex app-server` process on a scripted model, answering amendment questions."""

    def __init__(self, codex: Path, home: Path, cwd: Path, approval: str = "on-request") -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _ResponsesHandler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        port = self._server.server_address[1]
        home.mkdir(parents=True, exist_ok=True)
        cwd.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'model = "gpt-5.1-codex"\nmodel_provider = "oracle"\n'
            'approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n'
            "[model_providers.oracle]\n"
            f'name = "oracle"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            'wire_api = "responses"\nenv_key = "ORACLE_API_KEY"\n',
            encoding="utf-8",
        )
        env = {**os.environ, "CODEX_HOME": str(home), "ORACLE_API_KEY": "dummy",
               "SHELL": "/bin/bash", "RUST_LOG": "error", "NO_COLOR": "1"}  # fmt: skip
        self._stderr = (home / "stderr.log").open("w")
        self._proc = subprocess.Popen(
            [str(codex), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, cwd=cwd, text=True, bufsize=1,
        )  # fmt: skip
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()
        self._next_id = 0
        self._calls = 0
        self._request("initialize", {"clientInfo": {"name": "shellgate-oracle", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})
        started = self._request(
            "thread/start",
            {"cwd": str(cwd), "approvalPolicy": approval, "sandbox": "workspace-write"},
        )
        self.thread_id: str = started["thread"]["id"]

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message) + "\n")
        self._proc.stdin.flush()

    def _wait(self, pick: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            line = self._lines.get(timeout=left)
            if line is None:
                raise RuntimeError("codex app-server exited; see stderr.log in its CODEX_HOME")
            message: dict[str, Any] = json.loads(line)
            if pick(message):
                return message
        raise TimeoutError("codex app-server did not answer in time")

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        reply = self._wait(lambda m: m.get("id") == rid and "method" not in m)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def propose(self, tool: str, args: dict[str, Any]) -> Proposal:
        """Run one turn whose model calls `tool` with `args`; decline any approval asked."""
        self._calls += 1
        spec = {"name": tool, "call_id": f"oracle-{self._calls}", "args": args}
        text = ORACLE_PREFIX + json.dumps(spec)
        self._request("turn/start", {"threadId": self.thread_id,
                                     "input": [{"type": "text", "text": text}]})  # fmt: skip
        proposal = Proposal(False, None)
        while True:
            message = self._wait(lambda m: m.get("method") in (APPROVAL_METHOD, "turn/completed"))
            if message["method"] == "turn/completed":
                return proposal
            params = message["params"]
            amendment = params.get("proposedExecpolicyAmendment")
            proposal = Proposal(True, None if amendment is None else tuple(amendment))
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"decision": "decline"}})

    def close(self) -> None:
        """Stop codex (closing stdin ends the app-server) and the scripted endpoint."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        # The pump sees EOF once codex is gone; only then is its pipe free to close.
        self._pump_thread.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()
        self._server.shutdown()
        self._server.server_close()
