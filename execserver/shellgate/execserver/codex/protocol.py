"""One Codex exec-server session: handshake, method dispatch and pushed process events.

Transport-neutral: a transport (ws.py, stdio.py) hands every decoded message to
`CodexSession.receive` and gives the session a `send` callable for answers and
notifications. Processes go through the daemon's one `ProcessTable` and `build_start_spec`,
so limits, backends, env policy and secret stripping are exactly the gRPC service's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shellgate.common.errors import ServiceError, SpawnError
from shellgate.common.tasks import TaskSet
from shellgate.execserver.codex import fsops, process_ops
from shellgate.execserver.codex.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Encoded,
    Message,
    RpcError,
    error_of,
    error_response,
    params_of,
    response,
)
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.info import HostInfo
from shellgate.execserver.process_table import ProcessTable

log = logging.getLogger(__name__)
Send = Callable[[Message | Encoded], Awaitable[None]]


@dataclass(frozen=True)
class CodexContext:
    """What every session shares: the daemon's config, process table, host facts, env."""

    config: ServerConfig
    table: ProcessTable
    host: HostInfo
    daemon_env: Mapping[str, str]


# fs/* methods: (blocking handler, whether it takes the max file size).
_FS: dict[str, tuple[Callable[..., Message], bool]] = {
    "fs/getMetadata": (fsops.get_metadata, False),
    "fs/readFile": (fsops.read_file, True),
    "fs/writeFile": (fsops.write_file, True),
    "fs/createDirectory": (fsops.create_directory, False),
    "fs/remove": (fsops.remove, False),
    "fs/copy": (fsops.copy, True),
    "fs/canonicalize": (fsops.canonicalize, False),
    "fs/readDirectory": (fsops.read_directory, False),
}


def params_wait(message: Message) -> bool:
    """Whether a request asks to long-poll (a positive `waitMs`)."""
    params = message.get("params")
    return isinstance(params, dict) and isinstance(params.get("waitMs"), int) \
        and params["waitMs"] > 0  # fmt: skip


class CodexSession:
    """One connection (one WebSocket or one stdio pair) speaking Codex's exec-server protocol."""

    def __init__(self, ctx: CodexContext, caller: str, send: Send) -> None:
        self._ctx = ctx
        self._send = send
        self.session_id = str(uuid.uuid4())
        self._processes = process_ops.SessionProcesses(
            ctx, caller, f"codex:{self.session_id}", send
        )
        # Long-polling process/read requests (owned here, cancelled by close()).
        self._requests = TaskSet(log)

    async def receive(self, message: Any) -> None:
        """Handle one decoded message: requests get an answer through send, in a task."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and ("result" in message or "error" in message):
                return  # an answer to nothing we asked: the server never sends requests
            await self._send(error_response(None, RpcError(INVALID_REQUEST, "invalid request")))
            return
        if "id" not in message:
            self._notified(message["method"])
            return
        if message["method"] == "process/read" and params_wait(message):
            # A long poll must not hold up the connection: it alone runs beside it.
            self._requests.spawn(self._answer(message), name="codex-process/read")
            return
        # Everything else in arrival order, answered in order, as Codex's own server does
        # (a write then a signal to one process must reach it in that order).
        await self._answer(message)

    def _notified(self, method: str) -> None:
        # `initialized` and other client notifications carry nothing this daemon acts on.
        log.debug("codex notification %s", method)

    async def _answer(self, message: Message) -> None:
        request_id = message["id"]
        method: str = message["method"]
        try:
            result = await self._dispatch(method, params_of(message))
            reply = response(request_id, result)
        except RpcError as exc:
            reply = error_response(request_id, exc)
        except ServiceError as exc:
            reply = error_response(request_id, error_of(exc))
        except Exception:
            log.exception("codex %s failed", method)
            reply = error_response(request_id, RpcError(INTERNAL_ERROR, "internal error"))
        await self._send(reply)
        if method == "process/start" and "result" in reply:
            self._processes.start_pump(reply["result"]["processId"])

    async def _dispatch(self, method: str, params: Message) -> Any:
        if method == "initialize":
            if self._processes.initialize_seen:
                raise RpcError(INVALID_REQUEST, "initialize may only be sent once per connection")
            self._processes.initialize_seen = True
            return {"sessionId": self.session_id, "environmentInfo": self.environment_info()}
        if not self._processes.initialize_seen:
            raise RpcError(INVALID_REQUEST, "initialize must be sent first")
        if method == "environment/info":
            return self.environment_info()
        if method == "environment/status":
            return {"status": "ready"}
        if method.startswith("process/"):
            return await self._processes.call(method, params)
        fs = _FS.get(method)
        if fs is not None:
            # The sandbox is checked before anything is touched (refused if unenforceable).
            sandbox = fsops.FsSandbox.of(params, self._ctx.daemon_env)
            handler, sized = fs
            if sized:
                return await asyncio.to_thread(
                    handler, params, self._ctx.config.max_file_bytes, sandbox
                )
            return await asyncio.to_thread(handler, params, sandbox)
        raise RpcError(
            METHOD_NOT_FOUND,
            f"shellgate-execserver does not implement `{method}` "
            "(supported: initialize, environment/*, process/*, fs/* file calls)",
        )

    def environment_info(self) -> Message:
        """`environment/info`: the daemon's real shell and cwd; every capability bit false."""
        return process_ops.environment_info(self._ctx.host)

    async def close(self) -> None:
        """The connection ended: its processes die with it, its requests are cancelled."""
        await self._requests.aclose()
        await self._processes.close()


__all__ = ["CodexContext", "CodexSession", "SpawnError"]
