"""The operator console in headless Chromium: login, environments, a live session's output
streaming into the page as it happens (without consuming what the model polls), a page on
another local port that receives the session cookie and still gets nothing of the console,
and a screenshot of the console with one pending approval and one live session."""

from __future__ import annotations

import contextlib
import http.server
import re
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.console_support import (
    CALLER_TOKEN,
    OPERATOR_TOKEN,
    WINDOW,
    Agent,
    ConsoleRouter,
    Http,
    artifacts_dir,
    by,
    console_router,
    events_of,
    exec_request,
    login_browser,
    open_console,
    operator_config,
    retry_stale,
    wait_for,
)

LINES = 14
# Prints line-1 … line-14, one every 0.4 s: the page must show them as they come.
LOOP = f"for i in $(seq 1 {LINES}); do echo line-$i; sleep 0.4; done"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleRouter]:
    folder = tmp_path_factory.mktemp("console-browser")
    with console_router(folder, operator_config(folder)) as running:
        yield running


def _dashboard(driver: Any, router: ConsoleRouter) -> None:
    if not open_console(driver, router.url):
        login_browser(driver, router.url, OPERATOR_TOKEN)
    wait_for(lambda: driver.find_elements(by().ID, "operator"), 10, "the dashboard")


def _session_output(driver: Any, session_id: int) -> str:
    """The streamed output shown in a session's row ("" while the row is absent)."""
    selector = f'tr.session-row[data-session-id="{session_id}"] pre.output'

    def read() -> str:
        found = driver.find_elements(by().CSS_SELECTOR, selector)
        return str(found[0].text) if found else ""

    return str(retry_stale(read))


def _start_loop(router: ConsoleRouter, thread: str) -> tuple[int, str]:
    """An exec_command session printing LINES lines; (session id, its first yield's text)."""
    first = events_of(
        router.stub(),
        exec_request(
            thread, {"cmd": LOOP, "login": False, "yield_time_ms": 300}, f"{thread}-start"
        ),
        CALLER_TOKEN,
    )
    done = first[-1].completed
    assert done.HasField("session_id"), done.output_text
    return done.session_id, done.output_text


def test_a_wrong_token_gets_no_console_then_the_operator_sees_environments(
    router: ConsoleRouter, browser: Any
) -> None:
    By = by()
    browser.delete_all_cookies()
    login_browser(browser, router.url, "not-a-token")
    assert "token not accepted" in browser.find_element(By.ID, "login-message").text
    assert not browser.find_elements(By.ID, "environments")
    assert "Pending approvals" not in browser.page_source
    login_browser(browser, router.url, OPERATOR_TOKEN)
    row = wait_for(
        lambda: browser.find_elements(
            By.CSS_SELECTOR, 'tr.environment-row[data-environment-id="local"]'
        ),
        10,
        "the environment",
    )[0]
    assert "embedded" in row.text and "ok" in row.text
    assert browser.find_element(By.ID, "operator").text == "alice"


def test_live_output_streams_into_the_page_and_the_model_still_gets_all_of_it(
    router: ConsoleRouter, browser: Any
) -> None:
    _dashboard(browser, router)
    session_id, first_text = _start_loop(router, "live-1")
    # The threads section refreshes itself and the new session's output starts streaming.
    early = wait_for(
        lambda: re.findall(r"line-(\d+)", _session_output(browser, session_id)),
        15,
        "streamed output",
    )
    browser.execute_script("window.__sameDocument = 42;")
    last_early = int(early[-1])
    assert last_early < LINES
    later = wait_for(
        lambda: (
            (n := re.findall(r"line-(\d+)", _session_output(browser, session_id)))
            and int(n[-1]) >= last_early + 2
            and n
        ),
        15,
        "later lines",
    )
    # New lines arrived into the same document: no reload, no navigation.
    assert browser.execute_script("return window.__sameDocument;") == 42
    assert [int(n) for n in later] == sorted({int(n) for n in later})
    # The model polls afterwards and still gets every line (the console only watched).
    texts = [first_text]
    for index in range(10):
        done = events_of(
            router.stub(),
            exec_request(
                "live-1",
                {"session_id": session_id, "chars": "", "yield_time_ms": 3000},
                f"live-1-poll-{index}",
                tool="write_stdin",
            ),
            CALLER_TOKEN,
        )[-1].completed
        texts.append(done.output_text)
        if done.HasField("exit_code"):
            break
    seen = [int(n) for n in re.findall(r"line-(\d+)", "".join(texts))]
    assert seen == list(range(1, LINES + 1))
    # The stream ended with the process.
    wait_for(
        lambda: browser.find_elements(by().CSS_SELECTOR, "pre.output[data-ended]"),
        10,
        "the end of the stream",
    )


class _OtherService(http.server.BaseHTTPRequestHandler):
    """Another local user's web service: serves a page, records the cookies it is sent."""

    cookies: list[str]

    def do_GET(self) -> None:
        type(self).cookies.append(self.headers.get("Cookie", ""))
        body = b"<!doctype html><title>another service</title><p id='other'>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _other_service() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on another port of 127.0.0.1: (its port, the cookies it got)."""
    cookies: list[str] = []
    handler = type("Recorder", (_OtherService,), {"cookies": cookies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1]), cookies
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


FETCH_CONSOLE = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "include", headers: {"X-Shellgate-Console": "guess"}})
  .then((r) => done("status " + r.status), () => done("blocked"));
"""


def test_a_page_on_another_local_port_gets_the_cookie_but_not_the_console(
    router: ConsoleRouter, browser: Any
) -> None:
    By = by()
    _dashboard(browser, router)
    with _other_service() as (port, cookies):
        browser.get(f"http://127.0.0.1:{port}/")
        wait_for(lambda: browser.find_elements(By.ID, "other"), 10, "the other page")
        # Cookies ignore ports: the other service received the console's session cookie...
        stolen = [c for c in cookies if "shellgate_console=" in c]
        assert stolen, cookies
        # ...but not the page key: sessionStorage belongs to the console's origin alone.
        key = browser.execute_script("return sessionStorage.getItem('shellgate-console-key')")
        assert key is None
        # Its page cannot read the console either (the console grants no CORS).
        assert browser.execute_async_script(FETCH_CONSOLE, router.url + "/fragments/page") == (
            "blocked"
        )
    # Replayed from outside the browser, the cookie opens nothing.
    replay = Http(router.url)
    headers = {"Cookie": stolen[-1]}
    status, _, body = replay.request("/", headers=headers)
    assert status == 200 and "Pending approvals" not in body and 'id="operator"' not in body
    for path in ("/fragments/page", "/fragments/pending", "/fragments/threads"):
        status, _, body = replay.request(path, headers=headers)
        assert status == 401 and "Pending approvals" not in body, path
    # The operator's own tab still holds its key and its console.
    assert open_console(browser, router.url)
    assert browser.find_element(By.ID, "operator").text == "alice"


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_screenshot_with_one_pending_approval_and_one_live_session(
    router: ConsoleRouter, browser: Any
) -> None:
    By = by()
    session_id, _ = _start_loop(router, "shot-session")
    agent = Agent(
        router.stub(),
        exec_request(
            "shot-approval", {"cmd": "printf 'screenshot\\n'", "login": False}, "shot-call"
        ),
        CALLER_TOKEN,
    )
    approval_id = agent.pending_id()
    _dashboard(browser, router)
    wait_for(
        lambda: browser.find_elements(
            By.CSS_SELECTOR, f'tr.pending-row[data-approval-id="{approval_id}"]'
        ),
        10,
        "the pending row",
    )
    wait_for(lambda: "line-" in _session_output(browser, session_id), 15, "session output")

    # At the moment of the screenshot: exactly one pending row, the live session's row with
    # output, the buttons of the approval (read again if a refresh replaced the section).
    def present() -> tuple[int, str, bool, bool, str]:
        rows = browser.find_elements(By.CSS_SELECTOR, "tr.pending-row")
        row = rows[0]
        return (
            len(rows),
            row.find_element(By.CSS_SELECTOR, ".command").text,
            bool(row.find_elements(By.CSS_SELECTOR, "button.approve")),
            bool(row.find_elements(By.CSS_SELECTOR, "button.deny")),
            _session_output(browser, session_id),
        )

    count, command, approve, deny, output = retry_stale(present)
    assert count == 1 and "printf" in command and approve and deny
    assert "line-" in output
    shot = artifacts_dir() / "console-pending-and-live-session.png"
    assert browser.save_screenshot(str(shot))
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight];")
    assert _png_size(shot) == tuple(inner)
    assert inner[0] == WINDOW[0] and 0 < inner[1] <= WINDOW[1]
    # Leave nothing parked: deny it.
    retry_stale(
        lambda: browser.find_element(
            By.CSS_SELECTOR, f'tr.pending-row[data-approval-id="{approval_id}"] button.deny'
        ).click()
    )
    assert "rejected by user" in agent.result()[-1].completed.output_text
