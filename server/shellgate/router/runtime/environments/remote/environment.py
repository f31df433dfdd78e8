"""Remote environments over ExecService: lazy channel, ProcessHandle adapter (spec 06 §5, §9)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.common.egress.wire import narrowing_pb
from shellgate.common.enum_maps import INHERIT, SANDBOX_MODES
from shellgate.common.env_policy import ShellEnvironmentPolicy, exec_server_env_payload
from shellgate.common.process.base import ExitStatus, SpawnRequest
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.common.tasks import TaskSet, cancel_and_wait
from shellgate.common.tracing import inject_metadata
from shellgate.router.apply_patch.fs import PatchFileSystem
from shellgate.router.runtime.environments.remote.breaker import BreakerSettings, CircuitBreaker
from shellgate.router.runtime.environments.remote.config import (
    RemoteConfig,
    local_daemon_token,
    make_channel,
    read_token,
)
from shellgate.router.runtime.environments.remote.fs import (
    RemoteFileSystem,
    approved_cwd_pb,
    identify_remote_cwd,
)
from shellgate.router.runtime.environments.remote.info import EnvironmentInfo, info_from_pb
from shellgate.router.runtime.environments.remote.process import RemoteProcess, exit_status_of
from shellgate.router.runtime.environments.spawn import (
    EnvironmentUnavailableError,
    Spawned,
    SpawnFailure,
)
from shellgate.v1 import (
    exec_pb2,
    exec_pb2_grpc,
    session_output_pb2,
    session_output_pb2_grpc,
    shell_pb2,
)

# grpc.aio.EOF is missing from the type stubs.
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]

# RemoteProcess lives in environments/remote/process.py; re-exported for its importers.
__all__ = ["RemoteConfig", "RemoteEnvironment", "RemoteProcess"]

# How stale a loopback daemon's generated token may be before it is read again.
LOCAL_TOKEN_REFRESH_S = 1.0
# The Start window (StartRequest.coalesce_ms): events of a command that ends within it come
# in one message. Output of a longer one arrives at most this much later than it would
# one event per message, far below any yield time or timeout the router applies.
START_COALESCE_MS = 10
_log = logging.getLogger(__name__)
# Health answers that mean the daemon cannot take calls now (the circuit opens).
_DOWN_CODES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
# A Read cursor past any real seq: the reply carries the state and no chunks.
_NO_CHUNKS_AFTER = 2**63 - 1


def _policy_pb(policy: ShellEnvironmentPolicy) -> shell_pb2.ShellEnvironmentPolicy:
    return shell_pb2.ShellEnvironmentPolicy(
        inherit=INHERIT[policy.inherit],
        ignore_default_excludes=policy.ignore_default_excludes,
        exclude=list(policy.exclude),
        set=dict(policy.set_pairs),
        include_only=list(policy.include_only),
    )


class RemoteEnvironment:
    """An exec-server daemon reached over gRPC; connected lazily, info cached per connection."""

    def __init__(
        self,
        config: RemoteConfig,
        *,
        env_policy: ShellEnvironmentPolicy | None = None,
        client_env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._env_policy = env_policy or ShellEnvironmentPolicy()
        # The router's own environment: the overlay is what the request env adds to what the
        # policy alone produces here (spec 05 §5.5).
        self._client_env = dict(os.environ if client_env is None else client_env)
        self._channel: grpc.aio.Channel | None = None
        self._stub: exec_pb2_grpc.ExecServiceStub | None = None
        self._lock = asyncio.Lock()
        self.info: EnvironmentInfo | None = None
        self.reachable = False
        self.last_error: str | None = None
        # Set by discovery while the daemon's address is no longer in DNS: not probed.
        self.withdrawn = False
        self._token = read_token(config.dial.token_file) if config.dial.token_file else ""
        self._local_token_value: str | None = None
        self._local_token_at = -LOCAL_TOKEN_REFRESH_S
        self.breaker = CircuitBreaker(
            BreakerSettings(config.reconnect_initial_backoff_ms, config.reconnect_max_backoff_ms)
        )
        # The background reconnect while the circuit is open (owned here; aclose ends it).
        self._retry: asyncio.Task[None] | None = None
        # The daemon owner TTL of detached (unified-exec) processes; None keeps the daemon's
        # default. Routers sharing sessions set it from the thread idle TTL (spec 06 §9).
        self.owner_ttl_ms: int | None = None
        # Release drains of reported sessions, off the answer's path (aclose joins them).
        self._releases = TaskSet(_log)

    @property
    def environment_id(self) -> str:
        """The configured id."""
        return self.config.environment_id

    @property
    def target(self) -> str:
        """The daemon's gRPC target."""
        return self.config.target

    @property
    def remote(self) -> bool:
        """Always remote."""
        return True

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Call metadata: the configured bearer token, else a local daemon's generated one."""
        token = self._token or self._local_token()
        # The current trace context rides along (W3C traceparent), when tracing is on.
        return inject_metadata((("authorization", f"Bearer {token}"),) if token else ())

    def _local_token(self) -> str | None:
        # Re-read at most once a second, not once per RPC: the daemon may start, or restart
        # with a new token, after the router, but every call need not open the file.
        now = time.monotonic()
        if now - self._local_token_at >= LOCAL_TOKEN_REFRESH_S:
            self._local_token_value = local_daemon_token(self.config)
            self._local_token_at = now
        return self._local_token_value

    def mark_unreachable(self, reason: str) -> None:
        """Record a failure; the next call reconnects (and refreshes GetInfo)."""
        self.reachable = False
        self.last_error = reason
        self._stub = None

    async def stub(self) -> exec_pb2_grpc.ExecServiceStub:
        """The connected stub; connects (with GetInfo) when needed, else raises unavailable.

        With the circuit open (a connect failed) it raises at once, never connecting: the
        background retry reconnects (see environments/remote/breaker.py).
        """
        if self._stub is not None:
            return self._stub
        if self.breaker.open:
            raise EnvironmentUnavailableError(self.environment_id, self.breaker.refusal())
        async with self._lock:
            if self._stub is not None:
                return self._stub
            if self.breaker.open:
                # Another caller's connect failed while this one waited for it.
                raise EnvironmentUnavailableError(self.environment_id, self.breaker.refusal())
            reason = await self._connect()
            if reason is not None:
                self._open_circuit(reason)
                raise EnvironmentUnavailableError(self.environment_id, reason)
            assert self._stub is not None
            return self._stub

    async def _connect(self) -> str | None:
        """A fresh channel, ready and with GetInfo read; the failure reason, else None."""
        if self._channel is not None:
            await self._channel.close(None)
        self._channel = make_channel(self.config)
        stub = exec_pb2_grpc.ExecServiceStub(self._channel)
        try:
            await asyncio.wait_for(
                self._channel.channel_ready(), self.config.dial.connect_timeout_ms / 1000
            )
            info = await stub.GetInfo(
                exec_pb2.GetInfoRequest(),
                timeout=self.config.dial.call_timeout_ms / 1000,
                metadata=self.metadata(),
            )
        except TimeoutError:
            return (
                f"connect to {self.config.target} timed out after "
                f"{self.config.dial.connect_timeout_ms} ms"
            )
        except grpc.aio.AioRpcError as exc:
            return f"{exc.code().name}: {exc.details()}"
        self.info = info_from_pb(info)
        self.reachable = True
        self.last_error = None
        self._stub = stub
        self.breaker.close()
        return None

    def _open_circuit(self, reason: str) -> None:
        """Fail fast from now on and reconnect in the background (one retry task)."""
        self.mark_unreachable(reason)
        if not self.breaker.open:
            _log.warning("environment %s unreachable, circuit open: %s", self.environment_id, reason)
        self.breaker.trip(reason)
        if self._retry is None or self._retry.done():
            self._retry = asyncio.create_task(
                self._reconnect(), name=f"reconnect-{self.environment_id}"
            )

    async def _reconnect(self) -> None:
        """Retry the connect with backoff until it works (or the circuit closes otherwise)."""
        while self.breaker.open:
            await asyncio.sleep(self.breaker.retry_delay_s())
            async with self._lock:
                if not self.breaker.open:
                    return
                reason = await self._connect()
            if reason is None:
                _log.info("environment %s reachable again, circuit closed", self.environment_id)
                return
            self.mark_unreachable(reason)
            self.breaker.retry_failed(reason)

    async def call(self, method: str, request: Any) -> Any:
        """One unary ExecService RPC, connecting first, with the call timeout and token."""
        stub = await self.stub()
        return await getattr(stub, method)(
            request, timeout=self.config.dial.call_timeout_ms / 1000, metadata=self.metadata()
        )

    async def check_health(self) -> bool:
        """gRPC health Check of the daemon (connecting when needed); updates reachability."""
        try:
            await self.stub()
        except EnvironmentUnavailableError:
            return False
        assert self._channel is not None
        health = health_pb2_grpc.HealthStub(self._channel)
        try:
            reply = await health.Check(
                health_pb2.HealthCheckRequest(service=""),
                timeout=self.config.dial.call_timeout_ms / 1000,
                metadata=self.metadata(),
            )
        except grpc.aio.AioRpcError as exc:
            reason = f"health check failed: {exc.code().name}: {exc.details()}"
            if exc.code() in _DOWN_CODES:
                # The daemon is gone: calls fail fast until the reconnect works.
                self._open_circuit(reason)
            else:
                self.mark_unreachable(reason)
            return False
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            self._open_circuit(f"health check: {name}")
            return False
        self.reachable = True
        self.last_error = None
        return True

    async def probe(self) -> bool:
        """Refresh GetInfo now (connecting when not connected); returns reachability.

        A connected channel is reused, never closed: in-flight calls and streams of other
        callers run on it, and a status refresh must not disturb them.
        """
        stub = self._stub
        if stub is None:
            with contextlib.suppress(EnvironmentUnavailableError):
                await self.stub()
            return self.reachable
        try:
            reply = await stub.GetInfo(
                exec_pb2.GetInfoRequest(),
                timeout=self.config.dial.call_timeout_ms / 1000,
                metadata=self.metadata(),
            )
            self.info = info_from_pb(reply)
        except grpc.aio.AioRpcError as exc:
            # Reported, not acted on: the channel reconnects by itself, and live streams
            # end (or not) on their own.
            self.reachable = False
            self.last_error = f"{exc.code().name}: {exc.details()}"
            return False
        self.reachable = True
        self.last_error = None
        return True

    async def spawn(
        self,
        request: SpawnRequest,
        sandbox: SandboxSpec,
        *,
        detach: bool,
        owner: str,
        env_policy: ShellEnvironmentPolicy | None = None,
    ) -> Spawned:
        """Start on the daemon (Direct mode); SpawnFailure / EnvironmentUnavailableError."""
        stub = await self.stub()
        policy, overlay = exec_server_env_payload(
            request.env, self._client_env, env_policy or self._env_policy
        )
        start = exec_pb2.StartRequest(
            owner=owner,
            argv=list(request.argv),
            cwd=request.cwd,
            env_policy=_policy_pb(policy),
            env=overlay,
            tty=request.tty,
            rows=request.rows,
            cols=request.cols,
            stdin_open=request.stdin_open,
            shell_mode=shell_pb2.SHELL_MODE_DIRECT,
            detach=detach,
            # One message for a short command instead of four (started, output, exited,
            # closed); a daemon that predates the field ignores it and streams as before.
            coalesce_ms=START_COALESCE_MS,
        )
        if detach and self.owner_ttl_ms is not None:
            start.owner_ttl_ms = self.owner_ttl_ms
        if request.cwd_identity is not None:
            start.approved_cwd.CopyFrom(approved_cwd_pb(request.cwd, request.cwd_identity))
        if sandbox.mode is not SandboxMode.NONE:
            start.sandbox.CopyFrom(
                shell_pb2.SandboxRequest(
                    mode=SANDBOX_MODES[sandbox.mode],
                    writable_roots=list(sandbox.writable_roots),
                    network_access=sandbox.network_access,
                )
            )
            if sandbox.egress_narrowing is not None:
                # The daemon governs its own egress; the turn can only narrow it.
                start.sandbox.egress.CopyFrom(narrowing_pb(sandbox.egress_narrowing))
        call = stub.Start(start, metadata=self.metadata())
        try:
            first = await asyncio.wait_for(call.read(), self.config.dial.call_timeout_ms / 1000)
        except TimeoutError:
            call.cancel()
            self.mark_unreachable("Start timed out")
            raise EnvironmentUnavailableError(self.environment_id, "Start timed out") from None
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                self.mark_unreachable(f"{exc.code().name}: {exc.details()}")
                raise EnvironmentUnavailableError(
                    self.environment_id, self.last_error or ""
                ) from exc
            raise SpawnFailure(exc.details() or exc.code().name) from exc
        if first is _EOF:
            raise SpawnFailure("exec-server ended the Start stream without an event")
        kind = first.event.WhichOneof("event")
        if kind == "spawn_failed":
            failed = first.event.spawn_failed
            raise SpawnFailure(failed.message, failed.errno)
        if kind != "started":
            call.cancel()
            raise SpawnFailure(f"unexpected first Start event {kind}")
        started = first.event.started
        handle = RemoteProcess(
            self, call, started.process_id, started.pid or None, pending=tuple(first.more)
        )
        return Spawned(handle, started.process_id, started.sandboxed)

    async def attach(self, process_id: str, after_seq: int, after_offset: int = 0) -> RemoteProcess:
        """Follow a (detached) daemon process from `after_seq` (whose output ended at
        `after_offset` bytes): Attach replays the rest, evicted bytes counted as omitted."""
        stub = await self.stub()
        call = stub.Attach(
            exec_pb2.AttachRequest(process_id=process_id, after_seq=after_seq),
            metadata=self.metadata(),
        )
        return RemoteProcess(
            self, call, process_id, None, after_seq=after_seq, after_offset=after_offset
        )

    async def process_status(self, process_id: str) -> tuple[bool, ExitStatus | None] | None:
        """(exited, exit status) of a daemon process, None when the daemon forgets it. A Read
        with no wait and nothing to return: it renews the process's owner TTL there too."""
        request = exec_pb2.ReadRequest(
            process_id=process_id, after_seq=_NO_CHUNKS_AFTER, max_bytes=1, wait_ms=0
        )
        try:
            reply = await self.call("Read", request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise
        if not reply.exited:
            return False, None
        if reply.failure:
            return True, ExitStatus(environment_lost=reply.failure)
        return True, exit_status_of(reply.exit_status)

    async def drain_session(
        self, process_id: str, *, release: bool = False, hold: bool = False, acknowledged: int = 0
    ) -> session_output_pb2.DrainResponse:
        """SessionOutputService.Drain (`release`: the end was reported; `hold`: two-phase)."""
        await self.stub()
        assert self._channel is not None
        stub = session_output_pb2_grpc.SessionOutputServiceStub(self._channel)
        request = session_output_pb2.DrainRequest(
            process_id=process_id, release=release, hold=hold, acknowledged_through_seq=acknowledged
        )
        timeout = self.config.dial.call_timeout_ms / 1000
        reply: session_output_pb2.DrainResponse = await stub.Drain(
            request, timeout=timeout, metadata=self.metadata()
        )
        return reply

    def release_session(self, process_id: str) -> None:
        """A release Drain in the background: the answer waits for no daemon round trip."""
        self._releases.spawn(self._release(process_id), name=f"release-{process_id}")

    async def _release(self, process_id: str) -> None:
        with contextlib.suppress(Exception):  # untold, the daemon forgets it at its owner TTL
            await self.drain_session(process_id, release=True)

    async def terminate_process(self, process_id: str) -> bool:
        """Kill a daemon process by id; False when the daemon no longer knows it."""
        try:
            reply = await self.call("Terminate", exec_pb2.TerminateRequest(process_id=process_id))
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise
        return bool(reply.running)

    def filesystem(self) -> PatchFileSystem:
        """The daemon host's filesystem over the file RPCs (call from a worker thread)."""
        return RemoteFileSystem(self, asyncio.get_running_loop())

    async def identify_cwd(self, path: str) -> tuple[int, int] | None:
        """The daemon host's (st_dev, st_ino) of `path` (its Stat); None when it reports none."""
        return await identify_remote_cwd(self, path)

    async def aclose(self) -> None:
        """End the background reconnect and release drains, close the channel."""
        await self._releases.join()
        if self._retry is not None:
            await cancel_and_wait(self._retry, log=_log)
            self._retry = None
        if self._channel is not None:
            await self._channel.close(None)
        self._channel = None
        self._stub = None
