"""SSH backend (asyncssh): pinned host key, bounded pool, remote group kill via a wrapper."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

import asyncssh
from shellgate.common.errors import (
    EnvironmentLostError,
    HostKeyMismatchError,
    NotATtyError,
    ProcessExitedError,
    SpawnError,
    StdinClosedError,
)
from shellgate.common.output_channel import OutputChannel
from shellgate.common.process.base import (
    ExitStatus,
    OutputChunk,
    ProcessHandle,
    Signal,
    SpawnRequest,
    Stream,
)
from shellgate.common.tasks import cancel_and_wait, log_failure
from shellgate.execserver.backends.ssh_wrapper import ERR, HELLO, READY, env_block, wrapper_command
from shellgate.execserver.config import ProcessLimits, SshConfig
from shellgate.execserver.info import HostInfo, ShellFacts, shell_from_path

log = logging.getLogger(__name__)
_PROBE = (
    'sh -c \'getent passwd "$(id -un)" | cut -d: -f7; pwd; uname -s; uname -m; uname -n; '
    'id -un; echo "$HOME"; b=$(command -v bwrap) || b=; echo "$b"; '
    'if [ -z "$b" ]; then echo "bwrap not found on the remote host"; '
    'elif e=$("$b" --ro-bind / / --dev /dev --unshare-net true 2>&1); then echo; '
    'else echo "bwrap failed on the remote host: $e" | head -c 200 | tr "\\n" " "; echo; fi\''
)


class SshProcess:
    """A remote process: one session channel, the wrapper's pid/pgid, kills by pgid."""

    def __init__(
        self, backend: SshBackend, conn: Any, proc: Any, pid: int, pgid: int, tty: bool,
        stdin_open: bool, leftover: bytes,
    ) -> None:
        self._backend = backend
        self._conn = conn
        self._proc = proc
        self._pid = pid
        self._remote_pgid = pgid
        self._tty = tty
        self._stdin_open = stdin_open or tty
        self._leftover = leftover
        self._exit: asyncio.Future[ExitStatus] = asyncio.get_running_loop().create_future()
        # Owned by this handle: it ends when the channel closes (terminate closes it); _wait
        # absorbs connection errors, anything else is logged when it happens.
        self._waiter = asyncio.create_task(self._wait(), name=f"ssh-wait-{pid}")
        self._waiter.add_done_callback(functools.partial(log_failure, log=log))

    @property
    def pid(self) -> int | None:
        """Remote pid."""
        return self._pid

    @property
    def pgid(self) -> int | None:
        """None: the group lives on another host (no local /proc)."""
        return None

    async def _wait(self) -> None:
        try:
            await self._proc.wait_closed()
        except Exception as exc:  # connection errors surface here
            log.info("ssh channel ended with %s", type(exc).__name__)
        status = self._proc.exit_status
        signame = self._proc.exit_signal
        if signame:
            number = getattr(__import__("signal"), "SIG" + signame[0], None)
            result = ExitStatus(signal=int(number) if number is not None else None, code=None
                                if number is not None else -1)
        elif status is not None and status >= 0:
            result = ExitStatus(code=status)
        else:
            result = ExitStatus(environment_lost="ssh connection lost")
            # The remote group may still run; kill it once a connection is back.
            self._backend.note_lost_group(self._remote_pgid)
        if not self._exit.done():
            self._exit.set_result(result)

    async def output(self) -> AsyncIterator[OutputChunk]:
        """Yield chunks until both channel streams reached EOF."""
        stream = Stream.PTY if self._tty else Stream.STDOUT
        if self._leftover:
            yield OutputChunk(stream, self._leftover)
        # Bounded (output_queue_chunks, output_buffer_bytes): while the consumer lags, the
        # readers stop reading and SSH flow control (the channel window) holds the remote
        # process back.
        limits = self._backend.limits
        channel: OutputChannel[Stream] = OutputChannel(
            max_bytes=limits.output_buffer_bytes, max_chunks=limits.output_queue_chunks
        )

        async def pump(reader: Any, which: Stream) -> None:
            try:
                while data := await reader.read(limits.read_chunk_bytes):
                    await channel.send(which, data)
            except Exception as exc:  # a lost connection ends the stream
                log.info("ssh %s reader ended with %s", which.value, type(exc).__name__)

        async def feed() -> None:
            try:
                async with asyncio.TaskGroup() as readers:
                    readers.create_task(pump(self._proc.stdout, stream))
                    if not self._tty:
                        readers.create_task(pump(self._proc.stderr, Stream.STDERR))
            finally:
                channel.close()

        # Owned by this generator: cancelled and awaited in the finally below (also when
        # the consumer stops early); the TaskGroup in it owns the two stream readers.
        feeder = asyncio.create_task(feed(), name=f"ssh-output-{self._pid}")
        try:
            async for item in channel:
                yield OutputChunk(item.meta, item.data)
        finally:
            await cancel_and_wait(feeder, log=log)

    async def write(self, data: bytes) -> None:
        """Write to the channel's stdin."""
        if self._exit.done():
            raise ProcessExitedError("process has exited")
        if not self._stdin_open:
            raise StdinClosedError("stdin is not open")
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def close_stdin(self) -> None:
        """EOF (^D on a PTY)."""
        if self._tty:
            await self.write(b"\x04")
            return
        if not self._stdin_open:
            raise StdinClosedError("stdin is not open")
        self._stdin_open = False
        self._proc.stdin.write_eof()

    async def resize(self, rows: int, cols: int) -> None:
        """Window-change request on the channel."""
        if not self._tty:
            raise NotATtyError("process has no tty")
        if self._exit.done():
            raise ProcessExitedError("process has exited")
        self._proc.change_terminal_size(cols, rows)

    async def signal(self, sig: Signal) -> None:
        """Signal the remote group with `kill` on a second channel."""
        if self._exit.done():
            raise ProcessExitedError("process has exited")
        await self._kill(sig.name if sig is not Signal.INTERRUPT else "INT")

    async def _kill(self, name: str) -> None:
        names = {"TERMINATE": "TERM", "HANGUP": "HUP"}
        command = f"kill -{names.get(name, name)} -- -{self._remote_pgid} 2>/dev/null; true"
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._conn.run(command, check=False), 10)

    async def wait(self) -> ExitStatus:
        """The exit status (environment_lost when the connection dropped)."""
        return await asyncio.shield(self._exit)

    async def terminate(self) -> None:
        """TERM the remote group, grace, KILL, and wait for the channel to close."""
        limits = self._backend.limits
        lost = self._exit.done() and self._exit.result().environment_lost is not None
        if lost:
            self._proc.close()
            self._backend.release(self._conn, self)
            return
        if not self._exit.done():
            await self._kill("TERM")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wait(), limits.kill_grace_ms / 1000)
        # Grandchildren may outlive the group leader: KILL the group whatever happened.
        await self._kill("KILL")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.wait(), limits.gone_timeout_ms / 1000)
        self._proc.close()
        self._backend.release(self._conn, self)


class SshBackend:
    """Runs processes on one host over a bounded pool of SSH connections."""

    def __init__(self, config: SshConfig, limits: ProcessLimits | None = None) -> None:
        self.config = config
        self.limits = limits or ProcessLimits()
        self._conns: dict[Any, int] = {}
        self._live: set[SshProcess] = set()
        self._lock = asyncio.Lock()
        self._info: HostInfo | None = None
        self._lost_groups: set[int] = set()

    @property
    def name(self) -> str:
        """Backend name."""
        return "ssh"

    async def _connect(self) -> Any:
        cfg = self.config
        if not cfg.known_hosts_file:
            raise HostKeyMismatchError("ssh backend needs a pinned known_hosts file")
        try:
            conn = await asyncio.wait_for(
                asyncssh.connect(
                    cfg.host, port=cfg.port, username=cfg.user or None,
                    client_keys=[cfg.key_file] if cfg.key_file else None,
                    known_hosts=cfg.known_hosts_file,
                    connect_timeout=cfg.connect_timeout_ms / 1000,
                    keepalive_interval=cfg.keepalive_interval_ms / 1000,
                    keepalive_count_max=cfg.keepalive_count_max,
                    agent_path=None,
                ),
                cfg.connect_timeout_ms / 1000,
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyMismatchError(f"ssh host key not verifiable: {exc}") from exc
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise EnvironmentLostError(f"ssh connect failed: {exc}") from exc
        self._info = None  # refresh the probe on every new connection
        if self._lost_groups:
            kills = "; ".join(f"kill -KILL -- -{g} 2>/dev/null" for g in self._lost_groups)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.run(kills + "; true", check=False), 10)
            self._lost_groups.clear()
        return conn

    def note_lost_group(self, pgid: int) -> None:
        """Remember a remote group whose connection dropped (killed on reconnect)."""
        self._lost_groups.add(pgid)

    async def _acquire(self) -> Any:
        async with self._lock:
            for conn, used in list(self._conns.items()):
                if conn.is_closed():
                    del self._conns[conn]
                elif used < self.config.channels_per_connection:
                    self._conns[conn] = used + 1
                    return conn
            if len(self._conns) >= self.config.pool_size:
                from shellgate.common.errors import LimitExceededError

                raise LimitExceededError(
                    f"ssh connection pool is full ({self.config.pool_size} connections of "
                    f"{self.config.channels_per_connection} channels)",
                    limit="ssh.pool_size",
                )
            conn = await self._connect()
            self._conns[conn] = 1
            return conn

    def release(self, conn: Any, proc: SshProcess | None = None) -> None:
        """Return a channel slot to the pool."""
        if proc is not None:
            if proc not in self._live:
                return
            self._live.discard(proc)
        if conn in self._conns:
            self._conns[conn] = max(0, self._conns[conn] - 1)

    async def host_info(self) -> HostInfo:
        """Probe the remote shell, cwd and platform once per connection (cached)."""
        if self._info is not None:
            return self._info
        conn = await self._acquire()
        try:
            result = await asyncio.wait_for(conn.run(_PROBE, check=False), 15)
        finally:
            self.release(conn)
        lines = str(result.stdout or "").splitlines() + [""] * 9
        shell: ShellFacts | None = shell_from_path(lines[0].strip()) or shell_from_path("/bin/sh")
        bwrap = lines[7].strip()
        reason = lines[8].strip() if bwrap.startswith("/") else "bwrap not found on the remote host"
        self._info = HostInfo(
            shell=shell, cwd=lines[1], os=lines[2].lower(), arch=lines[3], hostname=lines[4],
            user=lines[5], home=lines[6], backend="ssh", pty=True, signals=True,
            sandbox=not reason, sandbox_unavailable_reason=reason,
            bwrap_path=bwrap if not reason else "",
        )
        return self._info

    async def start(self, request: SpawnRequest) -> ProcessHandle:
        """Open a session channel running the wrapper; hand over env on stdin."""
        if not request.argv:
            raise SpawnError("argv must not be empty", 0)
        conn = await self._acquire()
        try:
            proc = await conn.create_process(
                wrapper_command(request.argv, request.tty),
                term_type="xterm" if request.tty else None,
                term_size=(request.cols, request.rows) if request.tty else None,
                encoding=None,
            )
            pid, pgid, leftover = await asyncio.wait_for(
                self._handshake(proc, request), self.limits.spawn_timeout_ms / 1000
            )
        except SpawnError:
            self.release(conn)
            raise
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            self.release(conn)
            raise EnvironmentLostError(f"ssh spawn failed: {exc}") from exc
        if not request.stdin_open and not request.tty:
            proc.stdin.write_eof()
        handle = SshProcess(
            self, conn, proc, pid, pgid, request.tty, request.stdin_open, leftover
        )
        self._live.add(handle)
        return handle

    async def _handshake(self, proc: Any, request: SpawnRequest) -> tuple[int, int, bytes]:
        buffer = b""
        pid = pgid = 0
        sent = False
        while True:
            data = await proc.stdout.read(4096)
            if not data:
                raise SpawnError("remote wrapper ended early", 0)
            buffer += data
            if not sent and HELLO in buffer:
                line, _, buffer = buffer.partition(HELLO)[2].partition(b"\n")
                fields = line.split()
                pid, pgid = int(fields[0]), int(fields[1])
                proc.stdin.write(env_block(request.env, request.cwd))
                sent = True
            if sent and ERR in buffer:
                text = buffer.partition(ERR)[2].partition(b"\n")[0].decode().strip()
                number, _, message = text.partition(" ")
                raise SpawnError(message, int(number) if number.isdigit() else 0)
            if sent and READY in buffer:
                rest = buffer.partition(READY)[2]
                rest = rest[2:] if rest.startswith(b"\r\n") else rest.removeprefix(b"\n")
                return pid, pgid, rest

    async def aclose(self) -> None:
        """Terminate every process and close every connection."""
        live, self._live = list(self._live), set()
        await asyncio.gather(*(p.terminate() for p in live), return_exceptions=True)
        for conn in list(self._conns):
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()
        self._conns.clear()
