"""The SDK's streamable HTTP app, each MCP session with an event store of its own.

mcp 2.3's session manager hands every session's transport the one `event_store` it was
given, and its `Server.streamable_http_app` builds that manager itself. So the app is
assembled here as the SDK assembles it (one route, the manager's `run()` as lifespan)
around a manager that gives each admitted session its own `SessionEvents` and releases it
when the session is discarded (DELETE, idle timeout, a failed opening request). That
touches three private names (the manager's `_admit_session` and `_discard_session`, the
transport's `_event_store`): pinned by `mcp>=2.3,<2.4`, checked by
tests/integration/test_mcp_resume.py.
"""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from shellgate.mcp.event_store import RETRY_MS, EventBudget, SessionEvents
from starlette.applications import Starlette
from starlette.routing import Route

__all__ = ["ResumableSessions", "streamable_app"]


class ResumableSessions(StreamableHTTPSessionManager):
    """The SDK's session manager; every session's response streams resumable, in bounds."""

    def __init__(
        self, app: Server[Any], budget: EventBudget, *, idle_timeout_s: float,
        security: TransportSecuritySettings,
    ) -> None:  # fmt: skip
        # The priming event's `retry:` is sent only where there is an event store: ours.
        super().__init__(
            app, retry_interval=RETRY_MS, session_idle_timeout=idle_timeout_s,
            security_settings=security,
        )  # fmt: skip
        self._budget = budget
        self._stores: dict[str, SessionEvents] = {}

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            store = self._budget.session()
            transport._event_store = store
            self._stores[transport.mcp_session_id] = store
        return transport

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        try:
            await super()._discard_session(session_id, transport)
        finally:
            # Called however the session ends (and maybe twice): its events go with it.
            store = self._stores.pop(session_id, None)
            if store is not None:
                store.close()


def streamable_app(
    server: Server[Any], *, path: str, idle_timeout_s: float, security: TransportSecuritySettings
) -> Starlette:
    """`server` as streamable HTTP at `path`, with resumable response streams."""
    manager = ResumableSessions(
        server, EventBudget(), idle_timeout_s=idle_timeout_s, security=security
    )
    return Starlette(
        routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda _app: manager.run(),
    )
