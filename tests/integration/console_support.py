"""Operator-console test support: a router process with the console on, a headless Chromium.

The router runs as `shellgate serve --config` (a real process); its console listens on
127.0.0.1:0 and the bound port is read from its log line. The browser is Debian's
chromium driven by Selenium through chromedriver; tests skip when either is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.integration.replicas import Replica, start_router_process
from tests.paths import REPO_ROOT
from tests.router_harness import function_item, turn
from tests.waiting import eventually

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WINDOW = (1366, 768)
OPERATOR_TOKEN = "tok-operator-alice"
CALLER_TOKEN = "tok-caller-bot"
# A caller that also holds the operator role (it must not approve its own calls).
BOTH_TOKEN = "tok-both-carol"
TOKENS = (
    f"alice {OPERATOR_TOKEN} roles=operator\n"
    f"bot {CALLER_TOKEN}\n"
    f"carol {BOTH_TOKEN} roles=operator\n"
)
# The operator name a login with each token claims (any other token: an unknown name).
SUBJECTS = {OPERATOR_TOKEN: "alice", CALLER_TOKEN: "bot", BOTH_TOKEN: "carol"}
UNKNOWN_NAME = "nobody"
# The header carrying the session's page key (the console's own pages hold it).
KEY_HEADER = "X-Shellgate-Console"
_KEY = re.compile(r'id="console-key" data-key="([^"]+)"')
_CONSOLE_LINE = re.compile(r"console listening on (https?://[^\s]+)")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'shellgate[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is absent (apt-get install chromium chromium-driver)"
    return None


def artifacts_dir() -> Path:
    """Where screenshots go: $SHELLGATE_TEST_ARTIFACTS, default test-artifacts/ (git-ignored)."""
    folder = Path(os.environ.get("SHELLGATE_TEST_ARTIFACTS") or REPO_ROOT / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def by() -> Any:
    """Selenium's locator strategies (imported late: the module loads without selenium)."""
    from selenium.webdriver.common.by import By

    return By


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium at 1366x768 with a fresh profile; quit afterwards."""
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(*WINDOW)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_url(replica: Replica, timeout_s: float = 10) -> str:
    """The console's base URL, from the router's log."""
    try:
        found = eventually(
            lambda: _CONSOLE_LINE.search(replica.log()), "the console line", timeout_s
        )
    except AssertionError:
        raise AssertionError(f"no console line in the log:\n{replica.log()[-2000:]}") from None
    return found.group(1)


def write_config(folder: Path, extra: str = "", *, tokens: str = TOKENS) -> Path:
    """A router config with the console on 127.0.0.1:0, tokens with roles, an audit log."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokens").write_text(tokens)
    config = folder / "router.toml"
    config.write_text(
        f'token_file = "{folder / "tokens"}"\n'
        f'audit_log = "{folder / "audit.log"}"\n'
        f'local_cwd = "{folder}"\n'
        'console_listen = "127.0.0.1:0"\n' + extra
    )
    return config


@dataclass
class ConsoleRouter:
    """A router process with its console."""

    replica: Replica
    url: str
    folder: Path

    def stub(self) -> router_pb2_grpc.ToolRouterServiceStub:
        """A ToolRouterService stub on the router's channel."""
        return self.replica.stub

    def audit_records(self) -> list[dict[str, Any]]:
        """Every record of the audit log so far."""
        path = self.folder / "audit.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(line) for line in lines if line.strip()]


@contextlib.contextmanager
def console_router(folder: Path, extra: str = "", name: str = "console") -> Iterator[ConsoleRouter]:
    """A router process with the console on; stopped (SIGTERM) afterwards."""
    replica = start_router_process(write_config(folder, extra), folder, name)
    try:
        yield ConsoleRouter(replica, console_url(replica), folder)
    finally:
        replica.stop()


def bearer(token: str) -> tuple[tuple[str, str]]:
    """gRPC call metadata for a token."""
    return (("authorization", f"Bearer {token}"),)


def exec_request(
    thread_id: str,
    arguments: dict[str, Any],
    call_id: str,
    *,
    tool: str = "exec_command",
    **turn_fields: Any,
) -> router_pb2.ExecuteRequest:
    """An Execute of a unified-exec tool call (full access unless asked)."""
    return router_pb2.ExecuteRequest(
        thread_id=thread_id,
        turn=turn(shell_tool=common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC, **turn_fields),
        item=function_item(tool, arguments, call_id),
    )


def events_of(
    stub: router_pb2_grpc.ToolRouterServiceStub,
    request: router_pb2.ExecuteRequest,
    token: str,
    timeout: float = 60,
) -> list[router_pb2.ExecuteResponse]:
    """Every event of one Execute made with `token`."""
    return list(stub.Execute(request, timeout=timeout, metadata=bearer(token)))


def kinds(events: Sequence[router_pb2.ExecuteResponse]) -> list[str]:
    """The event kinds of a stream, in order."""
    return [e.WhichOneof("event") or "" for e in events]


class Http:
    """A cookie-keeping HTTP client for the console (urllib; no redirects followed) that
    sends its login's page key on every request, as the console's own page does."""

    def __init__(self, base: str, context: ssl.SSLContext | None = None) -> None:
        self.base = base
        self.jar = CookieJar()
        self.key: str | None = None

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar),
            NoRedirect(),
            urllib.request.HTTPSHandler(context=context),
        )

    def request(
        self, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], str]:
        """(status, headers, body) of a GET, or a form POST when `form` is given."""
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        sent = dict(headers or {})
        if self.key is not None:
            sent.setdefault(KEY_HEADER, self.key)
        req = urllib.request.Request(self.base + path, data=data, headers=sent)
        try:
            with self.opener.open(req, timeout=10) as resp:
                return resp.status, dict(resp.headers.items()), resp.read().decode()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, dict(err.headers.items()), err.read().decode()

    def login(self, token: str, operator: str | None = None) -> tuple[int, dict[str, str], str]:
        """POST the login form (naming the token's operator unless told); keeps the key."""
        name = operator if operator is not None else SUBJECTS.get(token, UNKNOWN_NAME)
        status, headers, body = self.request("/login", {"operator": name, "token": token})
        found = _KEY.search(body)
        if status == 200 and found:
            self.key = found.group(1)
        return status, headers, body

    def page(self) -> tuple[int, dict[str, str], str]:
        """The logged-in page's content (what the shell at / fetches)."""
        return self.request("/fragments/page")

    def csrf(self) -> str:
        """The CSRF token of the logged-in session (from the page)."""
        status, _, body = self.page()
        assert status == 200, status
        found = re.search(r'name="csrf" value="([^"]+)"', body)
        assert found, body[:500]
        return found.group(1)


class Agent:
    """A scripted headless agent: one Execute in a background thread, its events collected."""

    def __init__(
        self,
        stub: router_pb2_grpc.ToolRouterServiceStub,
        request: router_pb2.ExecuteRequest,
        token: str,
        timeout: float = 60,
    ) -> None:
        self.events: list[router_pb2.ExecuteResponse] = []
        self.error: BaseException | None = None

        def run() -> None:
            try:
                for event in stub.Execute(request, timeout=timeout, metadata=bearer(token)):
                    self.events.append(event)
            except BaseException as exc:  # reported by result()
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def pending_id(self, timeout_s: float = 20) -> str:
        """The approval id once the call parked for an operator."""

        def parked() -> str:
            if self.error is not None:
                raise AssertionError(f"the call failed: {self.error}")
            found = [
                e.approval_pending.approval_id
                for e in list(self.events)
                if e.WhichOneof("event") == "approval_pending"
            ]
            return found[0] if found else ""

        return str(eventually(parked, "the call to park", timeout_s))

    def result(self, timeout_s: float = 30) -> list[router_pb2.ExecuteResponse]:
        """Every event once the stream ended (it must end with `completed`)."""
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the agent's stream did not end"
        if self.error is not None:
            raise AssertionError(f"the call failed: {self.error}")
        assert self.events and self.events[-1].WhichOneof("event") == "completed", kinds(
            self.events
        )
        return self.events


def output_of(events: Sequence[router_pb2.ExecuteResponse]) -> bytes:
    """The process output a stream carried."""
    return b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")


def wait_for(predicate: Any, timeout_s: float = 10, what: str = "condition") -> Any:
    """`tests.waiting.eventually` in this module's older argument order (kept for the
    browser tests that call it; new code calls `eventually` itself)."""
    return eventually(predicate, what, timeout_s)


def retry_stale(action: Any, attempts: int = 5) -> Any:
    """Run a browser action again when the page's refresh replaced its element meanwhile
    (the console re-renders its sections every few seconds)."""
    from selenium.common.exceptions import StaleElementReferenceException

    for attempt in range(attempts):
        try:
            return action()
        except StaleElementReferenceException:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)
    return None


def login_browser(driver: Any, base: str, token: str, operator: str | None = None) -> None:
    """Log the browser in through the form (naming the token's operator unless told)."""
    from selenium.webdriver.common.by import By

    driver.get(base + "/login")
    name = operator if operator is not None else SUBJECTS.get(token, UNKNOWN_NAME)
    driver.find_element(By.ID, "operator-name").send_keys(name)
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login-button").click()


def open_console(driver: Any, base: str, timeout_s: float = 10) -> bool:
    """Open the console's page; True once it shows the dashboard, False at the login form
    (the page loads its content with the key it holds, or goes to /login without one)."""
    from selenium.webdriver.common.by import By

    driver.get(base + "/")
    eventually(
        lambda: driver.find_elements(By.ID, "operator") or driver.find_elements(By.ID, "token"),
        "the dashboard or the login form",
        timeout_s,
    )
    return bool(driver.find_elements(By.ID, "operator"))


__all__ = [
    "BOTH_TOKEN",
    "CALLER_TOKEN",
    "KEY_HEADER",
    "OPERATOR_TOKEN",
    "RULES",
    "SUBJECTS",
    "WINDOW",
    "Agent",
    "ConsoleRouter",
    "Http",
    "approvals_table",
    "artifacts_dir",
    "browser_missing",
    "chromium",
    "console_router",
    "events_of",
    "exec_request",
    "kinds",
    "login_browser",
    "open_console",
    "operator_config",
    "output_of",
    "retry_stale",
    "wait_for",
]


# The printf rule that prompts, for the operator-approval console tests.
RULES = (
    'prefix_rule(pattern=["printf"], decision="prompt", justification="printing needs a person")\n'
)


def approvals_table(deadline_ms: int = 60_000) -> str:
    """Operator-routed approvals (a TOML table: it goes last)."""
    return f'[approvals]\ndefault_route = "operator"\noperator_deadline_ms = {deadline_ms}\n'


def operator_config(folder: Path, deadline_ms: int = 60_000) -> str:
    """Operator-routed approvals and a rule that prompts for printf."""
    rules = folder / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "base.rules").write_text(RULES)
    return f'rules_dirs = ["{rules}"]\n' + approvals_table(deadline_ms)
