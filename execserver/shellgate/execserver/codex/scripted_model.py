"""A scripted Responses endpoint on 127.0.0.1: a model that answers Codex from a script.

`codex-check` points a real `codex exec` at it (a `[model_providers.*]` entry whose
`base_url` is this endpoint, `wire_api = "responses"`), so a turn runs without any model
service. Every `POST …/responses` is answered with one SSE stream that `script` chooses from
the request body; every body is kept so the caller can read what Codex sent back (its
`function_call_output` items). `GET` (model listings) answers an empty list, on which Codex
falls back to its built-in model metadata.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Event = dict[str, Any]
Script = Callable[[Mapping[str, Any]], list[Event]]

# A Codex request body is the whole conversation so far (instructions, tools, items): a few
# hundred KiB for long scripted turns. Larger is refused (413) rather than held in memory.
MAX_BODY_BYTES = 32 * 1024 * 1024
# A connection idle this long (a stuck client) is dropped; Codex sends each request at once.
SOCKET_TIMEOUT_S = 60.0
_USAGE = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
          "output_tokens_details": None, "total_tokens": 2}  # fmt: skip


def stream(item: Mapping[str, Any]) -> list[Event]:
    """One Responses SSE stream carrying one output item."""
    return [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_item.done", "item": dict(item)},
        {"type": "response.completed", "response": {"id": "r", "usage": _USAGE}},
    ]


def final_message(text: str = "done") -> Event:
    """A plain assistant message item (it ends the turn)."""
    return {"type": "message", "role": "assistant", "id": "m",
            "content": [{"type": "output_text", "text": text}]}  # fmt: skip


def function_call(name: str, call_id: str, args: Mapping[str, Any]) -> Event:
    """A function_call item (its arguments a JSON string, as the Responses API sends them)."""
    return {"type": "function_call", "name": name, "call_id": call_id,
            "arguments": json.dumps(dict(args))}  # fmt: skip


def custom_call(name: str, call_id: str, text: str) -> Event:
    """A custom (freeform) tool call item, e.g. apply_patch."""
    return {"type": "custom_tool_call", "name": name, "call_id": call_id, "input": text}


def tool_outputs(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The `…call_output` items of a request body (what the tools answered), in order."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [i for i in items
            if isinstance(i, dict) and str(i.get("type", "")).endswith("call_output")]  # fmt: skip


def output_text(item: Mapping[str, Any]) -> str:
    """A tool output item's text (a structured output as its JSON)."""
    output = item.get("output")
    return output if isinstance(output, str) else json.dumps(output)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    server: ScriptedResponses

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the caller reports results, not an access log."""

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        """Model listings: none."""
        self._send(200, "application/json", b'{"data":[],"models":[]}')

    def do_POST(self) -> None:
        """`POST …/responses`: one scripted SSE stream."""
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(413, "text/plain", b"request body too large\n")
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, "text/plain", b"not JSON\n")
            return
        if not isinstance(body, dict):
            self._send(400, "text/plain", b"not a JSON object\n")
            return
        events = self.server.answer(body)
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, "text/event-stream", sse.encode())


class ScriptedResponses(ThreadingHTTPServer):
    """The scripted model, serving on 127.0.0.1 (an ephemeral port) from a daemon thread."""

    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._script = script
        self._bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, name="scripted-responses", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server_address[1])

    @property
    def base_url(self) -> str:
        """The provider `base_url` to give Codex."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Every request body received so far (a copy of the list)."""
        with self._lock:
            return list(self._bodies)

    def answer(self, body: dict[str, Any]) -> list[Event]:
        """Record one request body and return the script's events for it."""
        with self._lock:
            self._bodies.append(body)
        return self._script(body)

    def close(self) -> None:
        """Stop serving and release the port."""
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=SOCKET_TIMEOUT_S)

    def __enter__(self) -> ScriptedResponses:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
