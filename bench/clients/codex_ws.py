"""A lean JSON-RPC-over-websocket client for `codex exec-server` (Codex 0.169.0 protocol).

Protocol (spec 05 §5 and codex-rs/exec-server/src/protocol.rs): `initialize {clientName}` →
`{sessionId}`, then the `initialized` notification; `process/start {processId, argv, cwd
(file:// URI), env, tty, pipeStdin, arg0}` answers `{processId}`, and the server pushes
`process/output {processId, seq, stream, chunk(base64)}`, `process/exited {processId, seq,
exitCode}` and `process/closed {processId, seq}`.

Output notifications are the hot path of the throughput bench, so they are not decoded: the
chunk size is read off the base64 length. That makes this client cheaper than Codex's own,
which keeps the comparison in Codex's favour.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import websockets

from bench.clients.common import RunTimes

CONNECT_TIMEOUT_S = 10.0
OUTPUT_PREFIX = '{"method":"process/output"'


@dataclass
class _Proc:
    """Client-side state of one process."""

    t0: float
    exited: float = 0.0
    exit_code: int | None = None
    nbytes: int = 0
    done: asyncio.Future[float] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def _b64_len(text: str, start: int) -> int:
    end = text.index('"', start)
    n = end - start
    pad = (text[end - 1] == "=") + (text[end - 2] == "=") if n >= 2 else 0
    return n // 4 * 3 - pad


class CodexExecClient:
    """One initialised websocket session; many processes may run on it concurrently."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._procs: dict[str, _Proc] = {}
        self._reader: asyncio.Task[None] | None = None

    async def _read_loop(self) -> None:
        async for raw in self._ws:
            text = raw if isinstance(raw, str) else raw.decode()
            if text.startswith(OUTPUT_PREFIX):
                i = text.index('"processId":"') + 13
                proc = self._procs.get(text[i : text.index('"', i)])
                if proc is not None:
                    proc.nbytes += _b64_len(text, text.index('"chunk":"') + 9)
                continue
            msg = json.loads(text)
            if "id" in msg and msg["id"] in self._pending:
                fut = self._pending.pop(msg["id"])
                if not fut.done():
                    fut.set_result(msg)
                continue
            method, params = msg.get("method"), msg.get("params") or {}
            proc = self._procs.get(str(params.get("processId")))
            if proc is None:
                continue
            now = time.perf_counter()
            if method == "process/exited":
                proc.exited, proc.exit_code = now - proc.t0, params.get("exitCode")
            elif method == "process/closed" and not proc.done.done():
                proc.done.set_result(now - proc.t0)

    async def request(self, method: str, params: Mapping[str, Any], timeout_s: float = 30.0) -> Any:
        """Send a request and wait for its reply's `result` (raises on `error`)."""
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        await self._ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                        "params": params}))  # fmt: skip
        reply = await asyncio.wait_for(fut, timeout_s)
        if "error" in reply:
            raise RuntimeError(f"codex {method}: {reply['error']}")
        return reply.get("result")

    async def run(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout_s: float = 120.0
    ) -> RunTimes:
        """Start argv, wait for `process/closed`; times are from just before the send."""
        pid = f"b{next(self._pids)}"
        proc = _Proc(time.perf_counter())
        self._procs[pid] = proc
        try:
            await self.request("process/start", {
                "processId": pid, "argv": list(argv), "cwd": f"file://{cwd}", "env": dict(env),
                "tty": False, "pipeStdin": False, "arg0": None,
            })  # fmt: skip
            closed = await asyncio.wait_for(proc.done, timeout_s)
        finally:
            self._procs.pop(pid, None)
        return RunTimes(proc.exited, closed, proc.nbytes, proc.exit_code)


@contextlib.asynccontextmanager
async def codex_session(url: str) -> AsyncIterator[CodexExecClient]:
    """Connect, initialise, and keep a reader task until the block ends."""
    async with websockets.connect(url, max_size=None, open_timeout=CONNECT_TIMEOUT_S,
                                  compression=None) as ws:  # fmt: skip
        client = CodexExecClient(ws)
        reader = asyncio.create_task(client._read_loop())
        try:
            await client.request("initialize", {"clientName": "shellgate-bench"},
                                 CONNECT_TIMEOUT_S)  # fmt: skip
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            yield client
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
