"""Helpers for the shared-state tests: a loopback redis-server and routers wired to Redis.

`shared_router` shows the wiring the router app needs (until the config grows Redis keys):
a ThreadRegistry over RedisSharedState bound to the app's environments and instance id,
and a servicer whose session lookups go through the SessionManager's shared-aware API.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from shellgate.execserver.boundary import unary
from shellgate.router.app import RouterApp
from shellgate.router.config import RouterConfig
from shellgate.router.pipeline import HostContext
from shellgate.router.runtime.redis_state import RedisSharedState
from shellgate.router.runtime.threads import ThreadRegistry, ThreadState
from shellgate.router.servicer import ToolRouterServicer
from shellgate.v1 import router_pb2, router_pb2_grpc

REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if shutil.which("/usr/bin/redis-server") else None
)


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on loopback (no persistence); yields its URL."""
    assert REDIS_SERVER is not None
    port = free_port()
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class SharedServicer(ToolRouterServicer):
    """The three servicer changes shared sessions need (see the report for the lead)."""

    def __init__(self, app: RouterApp) -> None:
        super().__init__(app)
        self._shared_app = app

    def _host(self, thread: ThreadState | None) -> HostContext:
        host = super()._host(thread)
        if thread is None:
            return host
        sessions = thread.sessions
        return HostContext(
            policy=host.policy,
            parent_env=host.parent_env,
            filesystem=host.filesystem,
            # (1) shared sessions exist too (refreshed when the thread was fetched).
            session_exists=sessions.exists,
        )

    @unary
    async def ListSessions(self, request: Any, context: Any) -> Any:
        """(2) local and shared sessions."""
        thread = await self._shared_app.threads.get(request.thread_id)
        infos = await thread.sessions.list_sessions()
        return router_pb2.ListSessionsResponse(
            sessions=[
                router_pb2.SessionInfo(
                    session_id=s.session_id, environment_id=s.environment_id,
                    call_id=s.call_id, argv=list(s.argv), tty=s.tty, running=s.running,
                    exit_code=s.exit_code, started_at_ms=s.started_at_ms,
                    last_used_at_ms=s.last_used_at_ms,
                )
                for s in infos
            ]
        )  # fmt: skip

    @unary
    async def TerminateSession(self, request: Any, context: Any) -> Any:
        """(3) terminate through the manager (shared sessions by daemon process id)."""
        thread = await self._shared_app.threads.get(request.thread_id)
        # UnknownSessionError is NOT_FOUND at the boundary.
        was_running = await thread.sessions.terminate(request.session_id)
        return router_pb2.TerminateSessionResponse(was_running=was_running)


def wire_shared_threads(app: RouterApp, redis_url: str) -> None:
    """Replace the app's in-memory threads by a Redis-backed registry (the lead's wiring)."""
    limits = app.config.limits
    app.threads = ThreadRegistry(
        approval_ttl_ms=limits.approval_ttl_ms,
        idle_ttl_ms=limits.thread_idle_ttl_ms,
        shared=RedisSharedState.from_url(redis_url, idle_ttl_ms=limits.thread_idle_ttl_ms),
        environments=app.environments,
        instance_id=app.instance_id,
    )


@dataclass
class SharedRouter:
    """One router on its own loop thread."""

    app: RouterApp
    port: int
    loop: asyncio.AbstractEventLoop
    channel: grpc.Channel

    @property
    def stub(self) -> router_pb2_grpc.ToolRouterServiceStub:
        """A sync stub."""
        return router_pb2_grpc.ToolRouterServiceStub(self.channel)


@contextlib.contextmanager
def shared_router(config: RouterConfig, redis_url: str) -> Iterator[SharedRouter]:
    """A router whose thread state lives in Redis."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[RouterApp, grpc.aio.Server, int]:
        app = RouterApp(config)
        wire_shared_threads(app, redis_url)
        server = grpc.aio.server()
        router_pb2_grpc.add_ToolRouterServiceServicer_to_server(SharedServicer(app), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return app, server, port

    app, server, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield SharedRouter(app, port, loop, channel)
    finally:
        channel.close()

        async def stop() -> None:
            await server.stop(1)
            await app.aclose()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
