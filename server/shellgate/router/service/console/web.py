"""The console's HTTP surface (Starlette): login, pages, live output, approval decisions.

Every page but /login needs a logged-in operator (a session cookie); every state-changing
request is a POST carrying the session's CSRF token, from the console's own origin
(guard.py). Pages are server-rendered with Jinja2 (autoescape on); the shipped JS only
refreshes sections and appends streamed output as text.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from shellgate.common.errors import ServiceError, UnauthenticatedError
from shellgate.router.runtime.operator_desk import DECISIONS, OperatorDesk
from shellgate.router.service.console.guard import (
    SecurityHeaders,
    allowed_hosts,
    cookie_name,
    same_origin,
)
from shellgate.router.service.console.logins import ConsoleSession, LoginSessions, LoginThrottle
from shellgate.router.service.console.views import (
    audit_tail,
    clip,
    environment_rows,
    find_session,
    pending_rows,
    thread_rows,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from shellgate.router.service.app import RouterApp

__all__ = ["Console"]

log = logging.getLogger(__name__)
HERE = Path(__file__).parent
# A login form field larger than this is not a token.
MAX_TOKEN_CHARS = 4_096
# Live output streams open at once (all operators); past it a stream answers 503.
MAX_STREAMS = 64
# An idle stream sends a comment this often (proxies and the browser keep it open).
KEEPALIVE_S = 10.0
# One server-sent event carries at most this many characters of output.
MAX_EVENT_CHARS = 16 * 1024
Handler = Callable[[Request, ConsoleSession], Awaitable[Response]]


class Console:
    """The console of one router: its login table and its Starlette application."""

    def __init__(self, app: RouterApp, *, tls: bool) -> None:
        self.app = app
        self.tls = tls
        config = app.config
        self.logins = LoginSessions(
            config.console_session_idle_ms / 1000, config.console_max_sessions
        )
        self.throttle = LoginThrottle()
        self.cookie = cookie_name(tls)
        # Set at shutdown: live streams end so the listener can close.
        self.closing = asyncio.Event()
        self._streams = 0
        # One notice per session (the outcome of its last decision), shown once.
        self._notices: dict[str, str] = {}
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        routes = [
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self._guarded(self.logout, post=True), methods=["POST"]),
            Route("/", self._guarded(self.dashboard), methods=["GET"]),
            Route("/fragments/{name:str}", self._guarded(self.fragment), methods=["GET"]),
            Route(
                "/sessions/{thread_key:str}/{session_id:int}/stream",
                self._guarded(self.stream),
                methods=["GET"],
            ),
            Route(
                "/approvals/{approval_id:str}",
                self._guarded(self.decide, post=True),
                methods=["POST"],
            ),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        hosts = allowed_hosts(config.console_listen, config.console_hosts)
        self.asgi = SecurityHeaders(Starlette(routes=routes), tls=tls, hosts=hosts)

    @property
    def desk(self) -> OperatorDesk | None:
        """The router's operator desk (None: approvals by operators are not available)."""
        desk: OperatorDesk | None = getattr(self.app, "operator_desk", None)
        return desk

    # --- pages -------------------------------------------------------------------------

    def _render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status)

    def _session(self, request: Request) -> tuple[str, ConsoleSession] | None:
        session_id = request.cookies.get(self.cookie, "")
        if not session_id or len(session_id) > 128:
            return None
        session = self.logins.get(session_id)
        return None if session is None else (session_id, session)

    def _guarded(
        self, handler: Handler, *, post: bool = False
    ) -> Callable[[Request], Awaitable[Response]]:
        """`handler` for a logged-in operator only; a POST also needs origin and CSRF token."""

        async def endpoint(request: Request) -> Response:
            found = self._session(request)
            if found is None:
                if post:
                    return self._render("refused.html", 403, message="not logged in")
                return RedirectResponse("/login", status_code=303)
            session_id, session = found
            if post:
                form = await request.form(max_files=0, max_fields=8)
                presented = form.get("csrf") or request.headers.get("x-csrf-token", "")
                if (
                    not same_origin(request)
                    or not isinstance(presented, str)
                    or not session.csrf_ok(presented)
                ):
                    return self._render("refused.html", 403, message="request refused (CSRF check)")
            request.state.session_id = session_id
            return await handler(request, session)

        return endpoint

    async def login_page(self, request: Request) -> Response:
        """The login form."""
        if self._session(request) is not None:
            return RedirectResponse("/", status_code=303)
        return self._render("login.html", message="")

    async def login(self, request: Request) -> Response:
        """Check an operator token (constant time) and open a session."""
        peer = request.client.host if request.client else "?"
        if not same_origin(request):
            return self._render("refused.html", 403, message="request refused (origin)")
        if self.throttle.refused(peer):
            return self._render("login.html", 429, message="too many failed logins; wait a minute")
        form = await request.form(max_files=0, max_fields=4)
        token = form.get("token")
        subject = self._operator(token.strip() if isinstance(token, str) else "")
        if subject is None:
            self.throttle.failed(peer)
            log.info("console login refused from %s", peer)
            return self._render("login.html", 401, message="token not accepted")
        session_id = self.logins.create(subject)
        log.info("console login: operator %s from %s", subject, peer)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            self.cookie, session_id, httponly=True, samesite="strict", path="/", secure=self.tls
        )
        return response

    def _operator(self, token: str) -> str | None:
        """The operator subject a token authenticates, or None (not a token, not an operator)."""
        auth, desk = self.app.auth, self.desk
        # An open router (no tokens, no mTLS) accepts anything as `local`: no console login.
        if auth.open or desk is None or not token or len(token) > MAX_TOKEN_CHARS:
            return None
        try:
            subject = auth.authenticate({"authorization": f"Bearer {token}"}, {})
        except UnauthenticatedError:
            return None
        return subject if desk.is_operator(subject) else None

    async def logout(self, request: Request, session: ConsoleSession) -> Response:
        """End the session."""
        self.logins.end(request.state.session_id)
        self._notices.pop(request.state.session_id, None)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(
            self.cookie, path="/", secure=self.tls, httponly=True, samesite="strict"
        )
        return response

    async def _sections(self, session: ConsoleSession) -> dict[str, Any]:
        desk = self.desk
        pending = pending_rows(await desk.list_pending()) if desk is not None else []
        return {
            "operator": session.subject,
            "csrf": session.csrf_token,
            "environments": environment_rows(self.app),
            "threads": thread_rows(self.app),
            "pending": pending,
            "desk": desk is not None,
            "audit_on": bool(self.app.config.audit_log),
            "audit": await asyncio.to_thread(audit_tail, self.app.config.audit_log),
        }

    async def dashboard(self, request: Request, session: ConsoleSession) -> Response:
        """Every section on one page."""
        notice = self._notices.pop(request.state.session_id, "")
        return self._render("dashboard.html", notice=notice, **await self._sections(session))

    async def fragment(self, request: Request, session: ConsoleSession) -> Response:
        """One section alone (the page's script refreshes sections with it)."""
        name = request.path_params["name"]
        if name not in ("pending", "threads", "environments", "audit"):
            return self._render("refused.html", 404, message="no such section")
        return self._render(f"_{name}.html", **await self._sections(session))

    # --- live output -------------------------------------------------------------------

    async def stream(self, request: Request, session: ConsoleSession) -> Response:
        """A session's output as server-sent events, from now on (read-only: the model's
        polls still get all of it)."""
        proc = find_session(
            self.app, request.path_params["thread_key"], request.path_params["session_id"]
        )
        if proc is None:
            return self._render("refused.html", 404, message="no such session on this replica")
        if self._streams >= MAX_STREAMS:
            return self._render("refused.html", 503, message="too many live streams")
        tap = proc.watch()
        self._streams += 1

        async def events() -> AsyncIterator[str]:
            try:
                yield "retry: 3000\n\n"
                while not self.closing.is_set():
                    data = await tap.next(KEEPALIVE_S)
                    if data is None:
                        yield "event: end\ndata: {}\n\n"
                        return
                    if not data:
                        yield ": keepalive\n\n"
                        continue
                    text = data.decode("utf-8", errors="replace")
                    for start in range(0, len(text), MAX_EVENT_CHARS):
                        yield f"data: {json.dumps(text[start : start + MAX_EVENT_CHARS])}\n\n"
            finally:
                proc.unwatch(tap)
                self._streams -= 1

        return StreamingResponse(events(), media_type="text/event-stream")

    # --- decisions ---------------------------------------------------------------------

    async def decide(self, request: Request, session: ConsoleSession) -> Response:
        """Record the operator's decision through the desk; the outcome becomes a notice."""
        desk = self.desk
        form = await request.form(max_files=0, max_fields=8)
        decision = form.get("decision")
        approval_id = request.path_params["approval_id"]
        if desk is None:
            notice = "operator approvals are not available on this router"
        elif not isinstance(decision, str) or decision not in DECISIONS:
            notice = "unknown decision"
        else:
            try:
                await desk.decide(approval_id, decision, session.subject)
                notice = f"{decision}: {clip(approval_id, 80)}"
                log.info(
                    "console: operator %s decided %s: %s", session.subject, approval_id, decision
                )
            except ServiceError as exc:
                notice = f"refused: {clip(exc, 300)}"
        self._notices[request.state.session_id] = notice
        # Bounded: a session that never comes back for its notice loses it first.
        while len(self._notices) > self.app.config.console_max_sessions:
            self._notices.pop(next(iter(self._notices)))
        return RedirectResponse("/", status_code=303)
