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
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.codex_harness import (
    ScriptedResponses,
    codex_env,
    final_message,
    function_call,
    stream,
    write_config,
)

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
    if text.startswith(ORACLE_PREFIX) and not answered:
        spec = json.loads(text[len(ORACLE_PREFIX) :])
        return stream(function_call(spec["name"], spec["call_id"], spec["args"]))
    return stream(final_message())


@dataclass(frozen=True)
class Proposal:
    """Codex's answer for one call: whether it asked, and the amendment it offered."""

    asked: bool
    amendment: tuple[str, ...] | None


class CodexAppServer:
    """One `codex app-server` process on a scripted model, answering amendment questions."""

    def __init__(self, codex: Path, home: Path, cwd: Path, approval: str = "on-request") -> None:
        self._server = ScriptedResponses(scripted_events)
        cwd.mkdir(parents=True, exist_ok=True)
        write_config(home, self._server.port,
                     'approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n')
        env = codex_env(home)
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
        self._server.close()
