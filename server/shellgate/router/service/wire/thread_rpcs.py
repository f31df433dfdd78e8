"""ToolRouterService's thread, session and environment RPCs (a part of the servicer)."""

from __future__ import annotations

from typing import Any

import grpc
from shellgate.common.boundary import unary
from shellgate.router.runtime.threads.registry import ThreadState, owned_thread_key
from shellgate.router.service.app import VERSION, Caller, RouterApp
from shellgate.router.service.wire.events import status_pb
from shellgate.v1 import router_pb2

Ctx = grpc.aio.ServicerContext[Any, Any]


class ThreadRpcs:
    """ListEnvironments, ListSessions, TerminateSession, Interrupt, EndThread, GetServerInfo:
    the RPCs around calls, mixed into ToolRouterServicer (which provides `_app`, `_caller`)."""

    _app: RouterApp

    def _caller(self, context: Ctx) -> Caller:
        raise NotImplementedError  # pragma: no cover (ToolRouterServicer's)

    @unary
    async def ListEnvironments(
        self, request: router_pb2.ListEnvironmentsRequest, context: Ctx
    ) -> router_pb2.ListEnvironmentsResponse:
        """Every configured environment with reachability and reported info."""
        caller = self._caller(context)
        statuses = await self._app.environments.statuses(
            refresh=request.refresh, visible=caller.environments
        )
        return router_pb2.ListEnvironmentsResponse(environments=[status_pb(s) for s in statuses])

    async def _thread(self, context: Ctx, thread_id: str) -> ThreadState:
        """The caller's existing thread (threads belong to the authenticated subject)."""
        key = owned_thread_key(self._caller(context).subject, thread_id)
        return await self._app.threads.get(key)

    @unary
    async def ListSessions(
        self, request: router_pb2.ListSessionsRequest, context: Ctx
    ) -> router_pb2.ListSessionsResponse:
        """Unified-exec sessions of a thread."""
        thread = await self._thread(context, request.thread_id)
        return router_pb2.ListSessionsResponse(
            sessions=[
                router_pb2.SessionInfo(
                    session_id=s.session_id,
                    environment_id=s.environment_id,
                    call_id=s.call_id,
                    argv=list(s.argv),
                    tty=s.tty,
                    running=s.running,
                    exit_code=s.exit_code,
                    started_at_ms=s.started_at_ms,
                    last_used_at_ms=s.last_used_at_ms,
                )
                for s in await thread.sessions.list_sessions()
            ]
        )

    @unary
    async def TerminateSession(
        self, request: router_pb2.TerminateSessionRequest, context: Ctx
    ) -> router_pb2.TerminateSessionResponse:
        """Kill one unified-exec session (unknown → NOT_FOUND)."""
        key = owned_thread_key(self._caller(context).subject, request.thread_id)
        # An unknown session id is NOT_FOUND (UnknownSessionError) at the boundary; a local
        # session held by another replica is terminated there (redis_bus).
        was_running = await self._app.threads.terminate_session(key, request.session_id)
        return router_pb2.TerminateSessionResponse(was_running=was_running)

    @unary
    async def Interrupt(
        self, request: router_pb2.InterruptRequest, context: Ctx
    ) -> router_pb2.InterruptResponse:
        """Interrupt an in-flight Execute of a call."""
        key = owned_thread_key(self._caller(context).subject, request.thread_id)
        # Reaches the replica that runs the call (redis_bus); none runs it → NOT_FOUND.
        await self._app.threads.interrupt(key, request.call_id)
        return router_pb2.InterruptResponse()

    @unary
    async def EndThread(
        self, request: router_pb2.EndThreadRequest, context: Ctx
    ) -> router_pb2.EndThreadResponse:
        """Kill a thread's sessions and drop its approvals and pending calls (idempotent)."""
        key = owned_thread_key(self._caller(context).subject, request.thread_id)
        # An unknown or already ended thread answers zero counts, not NOT_FOUND.
        ended = await self._app.threads.end(key)
        return router_pb2.EndThreadResponse(
            terminated_sessions=ended.terminated_sessions,
            dropped_pending_approvals=ended.dropped_pending_approvals,
        )

    @unary
    async def GetServerInfo(
        self, request: router_pb2.GetServerInfoRequest, context: Ctx
    ) -> router_pb2.GetServerInfoResponse:
        """Version, environments, rules files and the last rules error."""
        caller = self._caller(context)
        statuses = await self._app.environments.statuses()
        out = router_pb2.GetServerInfoResponse(
            version=VERSION,
            instance_id=self._app.instance_id,
            environments=[
                status_pb(s)
                for s in statuses
                if caller.environments is None or s.environment_id in caller.environments
            ],
        )
        store = self._app.policy_store
        if store is not None:
            out.rules_files.extend(str(p) for p in store.files)
            if store.last_error:
                out.last_rules_error.message = store.last_error.splitlines()[0]
                out.last_rules_error.rendered = store.last_error
                out.last_rules_error.at_ms = store.last_error_at_ms
        return out
