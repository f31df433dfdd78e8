"""Exec-server test harness: the daemon as a subprocess (real pid) or in-process."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import grpc
from shellgate.execserver.config import ProcessLimits, ServerConfig
from shellgate.execserver.server import RunningServer, start_server
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import exec_pb2_grpc as pb_grpc
from shellgate.v1 import shell_pb2 as shell_pb

from tests.child import stop_child
from tests.nofile import nofile_prefix

# Tests let the whole daemon environment through (including SHELLGATE_TEST_MARK, so the
# orphan sweep sees every child).
INHERIT_ALL = shell_pb.ShellEnvironmentPolicy(inherit=shell_pb.SHELL_ENVIRONMENT_INHERIT_ALL)
FAST_LIMITS = ProcessLimits(kill_grace_ms=500, drain_ms=1_000)


def daemon_config(**overrides: Any) -> ServerConfig:
    """A loopback config with short grace periods."""
    base = ServerConfig(
        listen="127.0.0.1:0", process=FAST_LIMITS, sweep_interval_ms=200, local_token=False
    )
    return replace(base, **overrides)


@dataclass
class Daemon:
    """A daemon subprocess and where it listens."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def target(self) -> str:
        """host:port for a channel."""
        return f"127.0.0.1:{self.port}"


@contextlib.contextmanager
def daemon_subprocess(
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout_s: float = 20.0,
    *,
    local_token: bool = False,
    nofile: int | None = None,
    wrapper: Sequence[str] = (),
) -> Iterator[Daemon]:
    """Run `shellgate-execserver serve --listen 127.0.0.1:0 --print-port`; SIGTERM on exit.

    Without `local_token` the daemon trusts local callers (`--no-local-token`); `nofile`
    sets the child's descriptor limit (soft and hard, so it cannot raise it); `wrapper` is
    a command that execs the daemon as its last arguments (e.g. into a mount namespace).
    """
    args = [*wrapper, *nofile_prefix(nofile), sys.executable, "-m", "shellgate.execserver.cli", "serve",
            "--listen", "127.0.0.1:0", "--print-port", *extra_args]  # fmt: skip
    if not local_token:
        args.append("--no-local-token")
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or dict(os.environ)
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        line = proc.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"daemon did not print its port: {line!r} {err.decode()[-2000:]}")
        yield Daemon(proc, int(line))
    finally:
        stop_child(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextlib.asynccontextmanager
async def in_process_daemon(config: ServerConfig | None = None) -> AsyncIterator[RunningServer]:
    """Start the daemon in this event loop; stop it (killing every group) on exit."""
    running = await start_server(config or daemon_config())
    try:
        yield running
    finally:
        await running.stop(2_000)


@contextlib.asynccontextmanager
async def exec_stub(
    target: str,
    credentials: grpc.ChannelCredentials | None = None,
    options: Sequence[tuple[str, Any]] = (),
) -> AsyncIterator[Any]:
    """An ExecService stub on a fresh channel."""
    channel = (
        grpc.aio.secure_channel(target, credentials, options=list(options))
        if credentials is not None
        else grpc.aio.insecure_channel(target, options=list(options))
    )
    try:
        yield pb_grpc.ExecServiceStub(channel)
    finally:
        await channel.close()


def start_request(argv: Sequence[str], **fields: Any) -> pb.StartRequest:
    """A StartRequest that inherits the daemon's environment."""
    fields.setdefault("env_policy", INHERIT_ALL)
    return pb.StartRequest(argv=list(argv), **fields)


async def collect(stream: Any, limit_s: float = 20.0) -> list[Any]:
    """All events of a Start/Attach stream (bounded by limit_s)."""
    events: list[Any] = []
    deadline = time.monotonic() + limit_s
    async for message in stream:
        events.append(message.event)
        if time.monotonic() > deadline:
            raise TimeoutError("stream did not end")
    return events


def output_of(events: Sequence[Any]) -> bytes:
    """Concatenated output bytes of a list of events."""
    return b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")
