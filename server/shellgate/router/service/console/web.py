"""The console's HTTP surface (Starlette): login, pages, live output, approval decisions.

`/` is a shell page (it needs the session cookie and holds nothing); everything it shows
comes from requests that also carry the session's page key (`X-Shellgate-Console`), which
only the console's own page holds (logins.py): a cookie replayed from another origin of
the host gets 401. Every state-changing request is a POST carrying the session's CSRF
token, from the console's own origin (guard.py). Fragments are server-rendered with Jinja2
(autoescape on); the shipped JS fetches them, appends streamed output as text and posts
the forms.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from shellgate.common.errors import ServiceError, UnauthenticatedError
from shellgate.router.runtime.approvals.desk import OperatorDesk
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision
from shellgate.router.service.console.guard import (
    KEY_HEADER,
    SecurityHeaders,
    console_guard,
    cookie_name,
    same_origin,
)
from shellgate.router.service.console.logins import (
    SLOW_LOGIN_S,
    ConsoleSession,
    LoginSessions,
    LoginThrottle,
)
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
# An operator name longer than this is not one (and is counted under its first characters).
MAX_ACCOUNT_CHARS = 128
# Live output streams open at once (all operators); past it a stream answers 503.
MAX_STREAMS = 64
# An idle stream sends a comment this often (proxies and the browser keep it open).
KEEPALIVE_S = 10.0
# One server-sent event carries at most this many characters of output.
MAX_EVENT_CHARS = 16 * 1024
Handler = Callable[[Request, ConsoleSession], Awaitable[Response]]
SECTIONS = ("pending", "threads", "environments", "audit")
# The decision buttons' form values (the vocabulary's words) → the typed decision.
_DECISIONS = {decision.value: decision for decision in ApprovalDecision}


class Console:
    """The console of one router: its login table and its Starlette application."""

    def __init__(self, app: RouterApp, *, tls: bool, port: int) -> None:
        self.app = app
        self.tls = tls
        config = app.config
        self.guard = console_guard(config.console_listen, port, config.console_hosts, tls)
        self.logins = LoginSessions(
            config.console_session_idle_ms / 1000, config.console_max_sessions
        )
        self.throttle = LoginThrottle()
        # While the throttle slows logins they pass through here one at a time.
        self._slow_lane = asyncio.Lock()
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
            Route("/", self._guarded(self.shell, keyed=False), methods=["GET"]),
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
        self.asgi = SecurityHeaders(Starlette(routes=routes), tls=tls, guard=self.guard)

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
        # Looked up without counting as use: only a request with the page key does.
        session = self.logins.get(session_id, touch=False)
        return None if session is None else (session_id, session)

    def _guarded(
        self, handler: Handler, *, post: bool = False, keyed: bool = True
    ) -> Callable[[Request], Awaitable[Response]]:
        """`handler` for a logged-in operator only: the session cookie and (`keyed`, all
        but the shell page) the session's page key; a POST also needs origin and CSRF token."""

        async def endpoint(request: Request) -> Response:
            found = self._session(request)
            if found is None:
                if post:
                    return self._render("refused.html", 403, message="not logged in")
                return RedirectResponse("/login", status_code=303)
            session_id, session = found
            # The cookie alone reaches every port of the host; the key only this origin.
            if keyed:
                if not session.key_ok(request.headers.get(KEY_HEADER, "")):
                    return self._render("refused.html", 401, message="log in again on this page")
                self.logins.get(session_id)  # in use: its idle clock restarts
            if post:
                form = await request.form(max_files=0, max_fields=8)
                presented = form.get("csrf") or request.headers.get("x-csrf-token", "")
                if (
                    not same_origin(request, self.guard)
                    or not isinstance(presented, str)
                    or not session.csrf_ok(presented)
                ):
                    return self._render("refused.html", 403, message="request refused (CSRF check)")
            request.state.session_id = session_id
            return await handler(request, session)

        return endpoint

    async def login_page(self, request: Request) -> Response:
        """The login form (also with a session: a tab without the page key logs in again)."""
        return self._render("login.html", message="")

    async def login(self, request: Request) -> Response:
        """Check an operator's name and token (constant time) and open a session; the
        answer hands the page its key (signed_in.html) and sets the session cookie."""
        peer = request.client.host if request.client else "?"
        if not same_origin(request, self.guard):
            return self._render("refused.html", 403, message="request refused (origin)")
        form = await request.form(max_files=0, max_fields=4)
        name, token = form.get("operator"), form.get("token")
        account = name.strip()[:MAX_ACCOUNT_CHARS] if isinstance(name, str) else ""
        token_text = token.strip() if isinstance(token, str) else ""
        if self.throttle.refused(account):
            return self._render("login.html", 429, message="too many failed logins; wait a minute")
        subject = await self._check_login(account, token_text)
        if subject is None:
            # The claimed name is never logged: a token pasted into it would be.
            log.info("console login refused from %s", peer)
            return self._render("login.html", 401, message="token not accepted")
        session_id, session = self.logins.create(subject)
        log.info("console login: operator %s from %s", subject, peer)
        response = self._render("signed_in.html", key=session.page_key)
        response.set_cookie(
            self.cookie, session_id, httponly=True, samesite="strict", path="/", secure=self.tls
        )
        return response

    async def _check_login(self, account: str, token: str) -> str | None:
        """The operator subject if `token` is `account`'s, else None (counted as failed)."""
        if not self.throttle.slowed():
            return self._counted(account, token)
        # Many failures lately, over many accounts: logins take turns, so guessing across
        # accounts slows to one per SLOW_LOGIN_S; a correct token still gets in.
        async with self._slow_lane:
            await asyncio.sleep(SLOW_LOGIN_S)
            # Guesses that queued behind the account's last allowed failure stop here.
            if self.throttle.refused(account):
                return None
            return self._counted(account, token)

    def _counted(self, account: str, token: str) -> str | None:
        # No await from the throttle's check to here: concurrent guesses cannot slip past.
        subject = self._operator(token)
        if subject is None or subject != account:
            self.throttle.failed(account)
            return None
        return subject

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
            # What a passed deadline decides, shown on the row (`deadline_fallback`).
            "expired_as": "aborted"
            if self.app.config.approvals.deadline_fallback == "abort"
            else "denied",
            "audit_on": bool(self.app.config.audit_log),
            "audit": await asyncio.to_thread(audit_tail, self.app.config.audit_log),
        }

    async def shell(self, request: Request, session: ConsoleSession) -> Response:
        """The page the browser opens: no data, only the script that fetches it."""
        return self._render("shell.html")

    async def fragment(self, request: Request, session: ConsoleSession) -> Response:
        """`page` (every section, the operator, the last notice) or one section alone (the
        page's script refreshes sections with it)."""
        name = request.path_params["name"]
        if name == "page":
            notice = self._notices.pop(request.state.session_id, "")
            return self._render("_page.html", notice=notice, **await self._sections(session))
        if name not in SECTIONS:
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
        # A UTF-8 sequence split across two chunks is decoded whole, not as two U+FFFD.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

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
                    text = decoder.decode(data)
                    if not text:
                        continue
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
        elif not isinstance(decision, str) or decision not in _DECISIONS:
            notice = "unknown decision"
        else:
            try:
                await desk.decide(approval_id, _DECISIONS[decision], session.subject)
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
