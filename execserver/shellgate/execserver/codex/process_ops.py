"""`process/*` methods and pushed `process/output|exited|closed` events of one session.

Codex names its processes (`processId` in `process/start`); the session maps those names to
the daemon's table entries, which are scoped to the connection's caller like gRPC's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import (
    InvalidArgumentError,
    ProcessExitedError,
    ProcessNotFoundError,
    SandboxUnavailableError,
    SpawnError,
)
from shellgate.common.process.base import Signal
from shellgate.common.process.retention import SeqChunk
from shellgate.common.tasks import TaskSet
from shellgate.execserver.codex.sandbox_policy import sandbox_spec
from shellgate.execserver.codex.wire import (
    INVALID_REQUEST,
    Encoded,
    Message,
    RpcError,
    b64decode,
    b64encode,
    field,
    notification,
    output_notification,
    path_from_uri,
    uri_from_path,
)
from shellgate.execserver.follow import Closed, Exited, Gap, follow
from shellgate.execserver.info import HostInfo
from shellgate.execserver.managed import ManagedProcess
from shellgate.execserver.reads import read_retained
from shellgate.execserver.start_spec import StartOrder, build_start_spec

if TYPE_CHECKING:
    from shellgate.execserver.codex.protocol import CodexContext

log = logging.getLogger(__name__)
Send = Callable[[Message | Encoded], Awaitable[None]]
_CAPABILITIES = (
    "networkProxyLaunch", "networkProxyReviewDomains", "credentialMasking",
    "credentialMaskingCustomProviders", "capabilityDiscoverySandbox", "fsWatchMissing",
    "capabilityDiscoveryV2", "environmentConfigRead", "httpHeaderEnvVars",
    "sandboxedFileStreaming", "fileWriteStreaming", "shellSnapshotV2", "windowsMxc",
    "linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions",
)  # fmt: skip


def environment_info(host: HostInfo) -> Message:
    """The host's real shell, cwd and home; every capability bit false (none implemented)."""
    info: Message = {
        "executorVersion": f"shellgate-execserver {host.version}",
        "cwd": uri_from_path(host.cwd),
        "userHomeDir": uri_from_path(host.home),
        "platformOs": "linux" if host.os.startswith("linux") else host.os,
        "prependPathDirs": [],
        "temporaryDirectories": [],
        "tempDir": uri_from_path("/tmp"),
        "capabilities": dict.fromkeys(_CAPABILITIES, False),
    }
    if host.shell is not None:
        info["shell"] = {"name": host.shell.name, "path": host.shell.path}
    return info


def _env_policy(raw: Any) -> ShellEnvironmentPolicy | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RpcError(-32602, "invalid type for field `envPolicy`")
    try:
        return ShellEnvironmentPolicy.build(
            inherit=raw.get("inherit") or "all",
            ignore_default_excludes=bool(raw.get("ignoreDefaultExcludes")),
            exclude=[str(x) for x in raw.get("exclude") or ()],
            set_vars={str(k): str(v) for k, v in (raw.get("set") or {}).items()},
            include_only=[str(x) for x in raw.get("includeOnly") or ()],
        )
    except ValueError:
        raise InvalidArgumentError("envPolicy.inherit is not a known value") from None


def start_order(params: Message, owner: str, daemon_env: Mapping[str, str]) -> StartOrder:
    """The domain order for `process/start` (enforcement it cannot give is refused)."""
    # Translated before anything else, so an unenforceable sandbox refuses the whole start.
    sandbox = sandbox_spec(params.get("sandbox"), daemon_env)
    if params.get("enforceManagedNetwork") or params.get("managedNetwork") is not None \
            or params.get("networkProxy") is not None:  # fmt: skip
        raise SandboxUnavailableError(
            "shellgate-execserver cannot enforce Codex managed networking; refused, nothing ran"
        )
    argv = field(params, "argv", list)
    if not all(isinstance(a, str) for a in argv):
        raise RpcError(-32602, "invalid type for field `argv`")
    env = field(params, "env", dict, required=False) or {}
    tty = bool(field(params, "tty", bool, required=False))
    pipe_stdin = bool(field(params, "pipeStdin", bool, required=False))
    return StartOrder(
        argv=tuple(argv),
        cwd=path_from_uri(params.get("cwd"), "cwd"),
        env={str(k): str(v) for k, v in env.items()},
        env_policy=_env_policy(params.get("envPolicy")),
        tty=tty,
        stdin_open=tty or pipe_stdin,
        arg0=field(params, "arg0", str, required=False),
        sandbox=sandbox,
        owner=owner,
    )


@dataclass
class _Entry:
    proc: ManagedProcess
    # The pacer of this session's event pump (registered before the pump runs).
    pacer: int | None


class SessionProcesses:
    """The processes one session started, by Codex's names, and their event pumps."""

    def __init__(self, ctx: CodexContext, caller: str, owner: str, send: Send) -> None:
        self._ctx = ctx
        self._caller = caller
        self._owner = owner
        self._send = send
        self._entries: dict[str, _Entry] = {}
        self.initialize_seen = False
        # Event pumps, one per process (owned here, cancelled by close()).
        self._pumps = TaskSet(log)

    def _get(self, params: Message) -> tuple[str, ManagedProcess]:
        name = field(params, "processId", str)
        entry = self._entries.get(name)
        if entry is None:
            raise RpcError(INVALID_REQUEST, f"unknown process id {name}")
        try:
            # The table forgets a process after its retention: so does the session.
            return name, self._ctx.table.get(self._caller, entry.proc.process_id)
        except ProcessNotFoundError:
            del self._entries[name]
            raise RpcError(INVALID_REQUEST, f"unknown process id {name}") from None

    async def call(self, method: str, params: Message) -> Any:
        """Run one `process/*` request."""
        if method == "process/start":
            return await self._start(params)
        if method == "process/read":
            return await self._read(params)
        if method == "process/write":
            return await self._write(params)
        if method == "process/signal":
            return await self._signal(params)
        if method == "process/terminate":
            _, proc = self._get(params)
            return {"running": await proc.terminate()}
        raise RpcError(-32601, f"shellgate-execserver does not implement `{method}`")

    async def _start(self, params: Message) -> Message:
        name = field(params, "processId", str)
        if name in self._entries:
            raise RpcError(INVALID_REQUEST, f"process {name} already exists")
        ctx = self._ctx
        spec = build_start_spec(
            start_order(params, self._owner, ctx.daemon_env), self._caller,
            host=ctx.host, config=ctx.config, daemon_env=ctx.daemon_env,
        )  # fmt: skip
        try:
            proc, _ = await ctx.table.start(spec)
        except SpawnError as exc:
            raise RpcError(INVALID_REQUEST, exc.message) from None
        self._entries[name] = _Entry(proc, proc.add_pacer())
        # As Codex's own server on Linux names its bubblewrap + seccomp sandbox.
        return {"processId": name, "sandboxType": "linuxSeccomp" if spec.sandboxed else "none"}

    def start_pump(self, name: str) -> None:
        """Push this process's events (called once its start answer is sent)."""
        entry = self._entries.get(name)
        if entry is not None:
            self._pumps.spawn(self._pump(name, entry), name=f"codex-pump-{name}")

    async def _pump(self, name: str, entry: _Entry) -> None:
        proc, pacer = entry.proc, entry.pacer
        try:
            async for event in follow(proc, 0, pacer=pacer):
                if type(event) is SeqChunk:
                    await self._send(
                        output_notification(name, event.seq, event.stream.value, event.data)
                    )
                    if pacer is not None:
                        proc.pacer_progress(pacer, event.end)
                elif isinstance(event, Exited):
                    if event.status.environment_lost is not None:
                        continue  # no made-up exit code: process/read reports the failure
                    await self._send(notification("process/exited", {
                        "processId": name, "seq": event.seq,
                        "exitCode": event.status.shell_code,
                        "sandboxDenied": event.sandbox_denied,
                    }))  # fmt: skip
                elif isinstance(event, Closed):
                    await self._send(notification("process/closed", {
                        "processId": name, "seq": event.seq,
                    }))  # fmt: skip
                elif isinstance(event, Gap):
                    log.warning("codex process %s lost seqs %d-%d", name, event.first, event.last)
        finally:
            if pacer is not None:
                proc.remove_pacer(pacer)
                entry.pacer = None

    async def _read(self, params: Message) -> Message:
        _, proc = self._get(params)
        proc.touch()
        config = self._ctx.config
        after = field(params, "afterSeq", int, required=False) or 0
        max_bytes = field(params, "maxBytes", int, required=False)
        wait_ms = field(params, "waitMs", int, required=False) or 0
        result = await read_retained(
            proc, after, min(max_bytes or config.max_read_bytes, config.max_read_bytes),
            min(wait_ms, config.max_read_wait_ms),
        )
        status = proc.exit_status()
        return {
            "chunks": [
                {"seq": c.seq, "stream": c.stream.value, "chunk": b64encode(c.data)}
                for c in result.chunks
            ],
            "nextSeq": result.next_seq,
            "exited": proc.exited,
            "exitCode": None if status is None or status.environment_lost else status.shell_code,
            "closed": proc.closed,
            "failure": proc.failure or None,
            "sandboxDenied": proc.sandbox_denied,
        }

    async def _write(self, params: Message) -> Message:
        _, proc = self._get(params)
        data = b64decode(params.get("chunk"), "chunk")
        limit = self._ctx.config.max_write_bytes
        if len(data) > limit:
            raise InvalidArgumentError(f"chunk is larger than {limit} bytes", limit="max_write_bytes")
        proc.touch()
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.write(data)
        return {"status": "accepted"}

    async def _signal(self, params: Message) -> Message:
        _, proc = self._get(params)
        if params.get("signal") != "interrupt":
            raise RpcError(-32602, "unknown variant for field `signal`; expected `interrupt`")
        if proc.exited:
            raise ProcessExitedError("process has exited")
        await proc.handle.signal(Signal.INTERRUPT)
        return {}

    async def close(self) -> None:
        """Stop the pumps and kill what still runs (a session's processes die with it)."""
        await self._pumps.aclose()
        entries, self._entries = list(self._entries.values()), {}
        await asyncio.gather(*(e.proc.terminate_quietly() for e in entries))


