"""The Project door: `Project` on a port of its own, answered by worker threads (opt-in,
`project_listen`).

On the main port grpc-aio serves every RPC on the router's one event loop: a Project waits
there behind the Execute streams' callbacks, and grpc-aio's per-call cost caps it near the
empty RPC's rate (bench/README.md). grpc's sync server on a few threads costs about a
third less CPU per unary call and does not queue behind the loop: a worker answers from
the kept answers and the pure pipeline itself (`ToolRouterServicer.project_now`) and hands
to the loop only what needs it (a turn not converted yet, a remote environment,
apply_patch, a large item), waiting for that answer.

The door has the main port's protections: its TLS credentials (mTLS included), the same
authentication (`RouterApp.caller`), message size limits and connection options;
undecodable requests get INVALID_ARGUMENT with a fixed text; calls per peer are capped at
`connections.max_calls_per_peer` and calls in flight at `DOOR_MAX_CALLS`
(RESOURCE_EXHAUSTED beyond). Errors keep their status and reason (`status_for`). Only
Project is served there; any other method is UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import NoReturn, cast

import grpc
from shellgate.common.errors import (
    InvalidArgumentError,
    LimitExceededError,
    ServiceError,
    UnavailableError,
)
from shellgate.common.grpc.connections import (
    PeerCalls,
    peer_address,
    raise_nofile_limit,
    server_options,
)
from shellgate.common.grpc.listen import EXCLUSIVE_PORT_OPTIONS, bind
from shellgate.common.grpc.status import status_for
from shellgate.router.service.app import Caller, RouterApp
from shellgate.router.service.wire.servicer import ToolRouterServicer
from shellgate.v1 import router_pb2

__all__ = ["DOOR_MAX_CALLS", "DOOR_THREADS", "ProjectDoor", "start_project_door"]

log = logging.getLogger(__name__)
SERVICE = router_pb2.DESCRIPTOR.services_by_name["ToolRouterService"].full_name
METHOD = f"/{SERVICE}/Project"
# Workers: measured best for a unary call on two cores (4 threads: ~3 000 req/s against
# ~2 000 for grpc-aio, bench/README.md); more only contend for the GIL.
DOOR_THREADS = 4
# Calls accepted at once (queued for a worker); grpc refuses more with RESOURCE_EXHAUSTED.
DOOR_MAX_CALLS = 64
# How long a worker waits for the loop's answer to a call it handed over.
LOOP_ANSWER_TIMEOUT_S = 60.0


class ProjectDoor:
    """A started door: its bound port; `stop` ends it."""

    def __init__(self, server: grpc.Server, port: int, door: _Door) -> None:
        self._server = server
        self._door = door
        self.port = port

    @property
    def in_flight(self) -> int:
        """Calls admitted and not answered yet."""
        return self._door.in_flight

    async def stop(self, grace_s: float) -> None:
        """Refuse new calls, let those in flight end within `grace_s`, then cancel them."""
        done = self._server.stop(grace_s)
        await asyncio.to_thread(done.wait)


def start_project_door(
    app: RouterApp,
    servicer: ToolRouterServicer,
    loop: asyncio.AbstractEventLoop,
    credentials: grpc.ServerCredentials | None,
) -> ProjectDoor:
    """Bind `project_listen` and start serving Project there (ListenError when taken)."""
    config, limits = app.config, app.config.limits
    door = _Door(app, servicer, loop, PeerCalls(config.connections.max_calls_per_peer))
    handler = grpc.unary_unary_rpc_method_handler(door.project)  # bytes in, bytes out
    server = grpc.server(
        ThreadPoolExecutor(max_workers=DOOR_THREADS, thread_name_prefix="shellgate-project"),
        handlers=[grpc.method_handlers_generic_handler(SERVICE, {"Project": handler})],
        maximum_concurrent_rpcs=DOOR_MAX_CALLS,
        options=[
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            ("grpc.max_send_message_length", limits.max_send_message_bytes),
            *EXCLUSIVE_PORT_OPTIONS,
            *server_options(config.connections, raise_nofile_limit()),
        ],
    )
    port = bind(server, config.project_listen, credentials)
    server.start()
    log.info("project door listening on port %d", port)
    return ProjectDoor(server, port, door)


class _Door:
    """The handler of the door's one method (runs on its worker threads)."""

    def __init__(
        self,
        app: RouterApp,
        servicer: ToolRouterServicer,
        loop: asyncio.AbstractEventLoop,
        peers: PeerCalls,
    ) -> None:
        self._app = app
        self._servicer = servicer
        self._loop = loop
        self._peers = peers
        # PeerCalls is the loop's (one thread); here the workers share it.
        self._peers_lock = threading.Lock()
        self.in_flight = 0

    def project(self, raw: bytes, context: grpc.ServicerContext) -> bytes:
        """The serialized ProjectResponse, or the call aborted with the error's status."""
        address = peer_address(context.peer())
        with self._peers_lock:
            admitted = self._peers.enter(address)
            self.in_flight += admitted
        if not admitted:
            self._abort(context, LimitExceededError(
                f"this peer already has {self._peers.limit} calls in flight; retry when some "
                "end", limit="connections.max_calls_per_peer",
            ))  # fmt: skip
        try:
            outcome = self._outcome(raw, context)
        finally:
            with self._peers_lock:
                self._peers.leave(address)
                self.in_flight -= 1
        if isinstance(outcome, bytes):
            return outcome
        if isinstance(outcome, CancelledError) or not context.is_active():
            return b""  # the caller went away: nobody reads an answer
        self._abort(context, outcome)

    def _outcome(self, raw: bytes, context: grpc.ServicerContext) -> bytes | Exception:
        try:
            request = router_pb2.ProjectRequest.FromString(raw)
        except Exception:
            # Never the parser's text: it may quote caller bytes.
            return InvalidArgumentError(f"request is not a valid message for {METHOD}")
        try:
            caller = self._caller(context)
            answer = self._servicer.project_now(request, caller)
            if answer is not None:
                return answer
            future = asyncio.run_coroutine_threadsafe(
                self._servicer.project_for(request, caller), self._loop
            )
            # A caller that goes away does not leave the loop projecting for nobody.
            context.add_callback(lambda: _cancel(future))
            try:
                return future.result(LOOP_ANSWER_TIMEOUT_S)
            except TimeoutError:
                future.cancel()
                return UnavailableError(
                    f"the router did not answer within {LOOP_ANSWER_TIMEOUT_S:.0f} s; retry"
                )
        except Exception as exc:
            return exc

    def _caller(self, context: grpc.ServicerContext) -> Caller:
        if self._app.auth.open:
            return self._app.caller({}, {})
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        identity = cast(Mapping[str, Sequence[bytes]], context.auth_context() or {})
        return self._app.caller(metadata, identity)

    def _abort(self, context: grpc.ServicerContext, exc: Exception) -> NoReturn:
        if isinstance(exc, ServiceError):
            status = status_for(exc)
            self._servicer.on_rpc_error(status.code.name)
            context.abort_with_status(status)
        self._servicer.on_rpc_error(grpc.StatusCode.INTERNAL.name)
        incident = uuid.uuid4().hex[:12]
        # The exception goes to our log only; callers get the incident id, never the text.
        log.error("internal error, incident %s", incident, exc_info=exc)
        context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident})")


def _cancel(future: Future[bytes]) -> None:
    future.cancel()
