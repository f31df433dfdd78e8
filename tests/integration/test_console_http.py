"""The operator console over plain HTTP against a real router process: login, cookies,
the page key that binds a session to the console's origin, headers, CSRF and origin
checks, the per-account login throttle, and the console's config errors."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.router.service.console.logins import GLOBAL_SLOW_AFTER, MAX_FAILURES_PER_ACCOUNT

from tests.certs import make_tls
from tests.integration.console_support import (
    BOTH_TOKEN,
    CALLER_TOKEN,
    KEY_HEADER,
    OPERATOR_TOKEN,
    ConsoleRouter,
    Http,
    console_router,
)

# Text only a logged-in page carries.
CONSOLE_CONTENT = ("Pending approvals", "Environments", "Live threads", 'name="csrf"', "/logout")


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleRouter]:
    with console_router(tmp_path_factory.mktemp("console-http")) as running:
        yield running


def _no_console(body: str) -> None:
    for text in CONSOLE_CONTENT:
        assert text not in body


def test_pages_need_a_login(router: ConsoleRouter) -> None:
    http = Http(router.url)
    for path in ("/", "/fragments/page", "/fragments/pending", "/sessions/x.t/1000/stream"):
        status, headers, body = http.request(path)
        assert (status, headers.get("location")) == (303, "/login"), path
        _no_console(body)
    status, _, body = http.request("/login")
    assert status == 200 and 'name="token"' in body
    _no_console(body)


def _port(router: ConsoleRouter) -> int:
    return int(router.url.rpartition(":")[2])


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:80", "127.0.0.2", "localhost.evil", "localhost",
             "evil.example:{port}", "127.0.0.1:{other}", "localhost:{other}"],
)  # fmt: skip
def test_an_unknown_host_header_gets_no_page(router: ConsoleRouter, host: str) -> None:
    # DNS rebinding: another site's name resolved to loopback reaches the listener; a Host
    # of another port (or none: port 80) names another listener.
    port = _port(router)
    host = host.format(port=port, other=port + 1)
    http = Http(router.url)
    for path in ("/login", "/", "/static/console.js"):
        status, _, body = http.request(path, headers={"Host": host})
        assert status == 421, (path, status)
        _no_console(body)
        assert 'name="token"' not in body
    # Every loopback spelling on the console's own port names it.
    for own in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.2:{port}"):
        status, _, body = http.request("/login", headers={"Host": own})
        assert status == 200 and 'name="token"' in body, own
    assert http.login(OPERATOR_TOKEN)[0] == 200


def test_a_foreign_origin_gets_no_page(router: ConsoleRouter) -> None:
    http = Http(router.url)
    assert http.login(OPERATOR_TOKEN)[0] == 200
    for origin in (f"http://localhost:{_port(router) + 1}", "http://evil.example"):
        status, _, body = http.request("/fragments/page", headers={"Origin": origin})
        assert status == 403, origin
        _no_console(body)
    assert http.page()[0] == 200


@pytest.mark.parametrize("token", ["wrong-token", CALLER_TOKEN, "", "x" * 5000])
def test_a_refused_login_gets_401_and_no_console(router: ConsoleRouter, token: str) -> None:
    http = Http(router.url)
    status, headers, body = http.login(token)
    assert status == 401
    assert "token not accepted" in body
    _no_console(body)
    assert "set-cookie" not in {k.lower() for k in headers}
    assert token not in body or token == ""
    assert http.request("/")[0] == 303


def test_operator_login_cookie_and_security_headers(router: ConsoleRouter) -> None:
    http = Http(router.url)
    status, headers, body = http.login(OPERATOR_TOKEN)
    # The answer hands the page its key (kept in sessionStorage by the script).
    assert status == 200 and http.key is not None and len(http.key) >= 43
    assert "/static/console.js" in body
    cookie = headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == "shellgate_console"
    flags = {part.strip().split("=")[0].lower(): part for part in rest.split(";")[1:]}
    assert "httponly" in flags and "path" in flags and flags["path"].strip() == "Path=/"
    assert flags["samesite"].strip().lower() == "samesite=strict"
    # Plain HTTP on loopback: no Secure flag (the browser would drop the cookie).
    assert "secure" not in flags
    # 256 random bits, URL-safe base64.
    assert len(rest.split(";")[0]) >= 43
    # The page itself is a shell; its content comes with the key.
    status, _, body = http.request("/")
    assert status == 200 and 'id="console"' in body
    _no_console(body)
    status, headers, body = http.page()
    assert status == 200 and "alice" in body and "Environments" in body
    assert headers["content-security-policy"].startswith("default-src 'self'")
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "<script>" not in body and "unsafe-inline" not in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    assert headers["x-content-type-options"] == "nosniff"


def test_posts_need_the_csrf_token_and_the_same_origin(router: ConsoleRouter) -> None:
    http = Http(router.url)
    http.login(OPERATOR_TOKEN)
    csrf = http.csrf()
    form = {"decision": "approved"}
    assert http.request("/approvals/no-such", form)[0] == 403
    assert http.request("/approvals/no-such", {**form, "csrf": csrf + "x"})[0] == 403
    cross = {"Origin": "http://evil.example"}
    assert http.request("/approvals/no-such", {**form, "csrf": csrf}, cross)[0] == 403
    site = {"Sec-Fetch-Site": "cross-site"}
    assert http.request("/approvals/no-such", {**form, "csrf": csrf}, site)[0] == 403
    assert http.request("/logout", {})[0] == 403
    # Same origin with the token: the desk answers (an unknown approval is a readable notice).
    same = {"Origin": router.url, "Sec-Fetch-Site": "same-origin"}
    status, headers, _ = http.request("/approvals/no-such", {**form, "csrf": csrf}, same)
    assert (status, headers.get("location")) == (303, "/")
    status, _, body = http.page()
    assert status == 200 and 'id="notice"' in body and "refused:" in body
    # A GET never changes state: the decision route takes POST only.
    assert http.request("/approvals/no-such")[0] == 405
    # Cross-origin login is refused too (login CSRF).
    assert Http(router.url).request("/login", {"token": OPERATOR_TOKEN}, cross)[0] == 403


def test_logout_ends_the_session(router: ConsoleRouter) -> None:
    http = Http(router.url)
    http.login(BOTH_TOKEN)
    csrf = http.csrf()
    cookie = next(iter(http.jar)).value
    assert http.request("/logout", {"csrf": csrf})[0] == 303
    # The old cookie is dead on the server, not only deleted in this client.
    stale = Http(router.url)
    status, _, _ = stale.request("/", headers={"Cookie": f"shellgate_console={cookie}"})
    assert status == 303


def test_a_cookie_without_the_page_key_gets_nothing(router: ConsoleRouter) -> None:
    """Cookies ignore ports: a service on another local port receives the session cookie.
    Replayed without the page key (which only the console's own page holds) it opens no
    page and decides nothing."""
    http = Http(router.url)
    assert http.login(OPERATOR_TOKEN)[0] == 200
    csrf = http.csrf()
    cookie = {"Cookie": f"shellgate_console={next(iter(http.jar)).value}"}
    other = Http(router.url)
    status, _, body = other.request("/", headers=cookie)
    assert status == 200  # the shell: nothing of the console
    _no_console(body)
    assert "alice" not in body and csrf not in body
    second = Http(router.url)
    assert second.login(BOTH_TOKEN)[0] == 200
    for key in (None, "", "wrong", second.key, (http.key or "") + "x"):
        headers = dict(cookie) if key is None else {**cookie, KEY_HEADER: key}
        for path in ("/fragments/page", "/fragments/pending", "/sessions/x.t/1000/stream"):
            status, _, body = other.request(path, headers=headers)
            assert status == 401, (path, key)
            _no_console(body)
        status, _, _ = other.request("/approvals/no-such", {"decision": "denied", "csrf": csrf},
                                     headers)  # fmt: skip
        assert status == 401, key
        assert other.request("/logout", {"csrf": csrf}, headers)[0] == 401
    # The session itself is untouched: the page that holds the key still works.
    assert http.page()[0] == 200


def test_failed_logins_are_throttled_per_account(router: ConsoleRouter) -> None:
    """Six bad logins naming one operator: that account is refused for the window, even
    with its right token (guessing slows), and another operator logs in at once (all local
    users share 127.0.0.1, so a per-peer count would have locked everyone out)."""
    http = Http(router.url)
    statuses = [http.login(f"guess-{i}", operator="carol")[0] for i in range(6)]
    assert statuses == [401] * MAX_FAILURES_PER_ACCOUNT + [429]
    status, _, body = http.login(BOTH_TOKEN)
    assert status == 429 and "too many failed logins" in body
    _no_console(body)
    # alice's token under carol's name is no way around it either.
    assert http.login(OPERATOR_TOKEN, operator="carol")[0] == 429
    other = Http(router.url)
    assert other.login(OPERATOR_TOKEN)[0] == 200
    assert "alice" in other.page()[2]


def test_many_failures_slow_logins_but_never_refuse_a_correct_token(router: ConsoleRouter) -> None:
    """Last in the module (logins take turns for a minute after it): failures spread over
    many names are never refused for the names' sake, and once past the global bound the
    right token of an operator still opens a session."""
    http = Http(router.url)
    statuses = [http.login("guess", operator=f"name-{i}")[0] for i in range(GLOBAL_SLOW_AFTER + 2)]
    assert statuses == [401] * (GLOBAL_SLOW_AFTER + 2)
    assert http.login(OPERATOR_TOKEN)[0] == 200
    assert "alice" in http.page()[2]


def test_over_tls_the_cookie_is_secure_and_host_bound(tmp_path: Path) -> None:
    tls = make_tls(tmp_path / "tls")
    extra = (
        f'console_tls_cert_file = "{tls.server_cert}"\nconsole_tls_key_file = "{tls.server_key}"\n'
    )
    with console_router(tmp_path, extra) as router:
        assert router.url.startswith("https://127.0.0.1:")
        http = Http(router.url, ssl.create_default_context(cafile=tls.ca_cert))
        status, headers, _ = http.login(OPERATOR_TOKEN)
        assert status == 200
        cookie = headers["set-cookie"]
        assert cookie.startswith("__Host-shellgate_console=")
        flags = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"secure", "httponly", "path=/", "samesite=strict"} <= flags
        assert not any(f.startswith("domain") for f in flags)
        status, headers, body = http.page()
        assert status == 200 and "alice" in body
        assert headers["strict-transport-security"].startswith("max-age=")


def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "shellgate.router.cli.main",
            "serve",
            "--config",
            str(config),
            "--listen",
            "127.0.0.1:0",
            "--no-local-token",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_a_non_loopback_console_needs_tls(tmp_path: Path) -> None:
    config = tmp_path / "router.toml"
    config.write_text('console_listen = "0.0.0.0:0"\n')
    done = _serve(config)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "config error: console_listen: address is not loopback" in lines[0]
    config.write_text('console_listen = "127.0.0.1:0"\nconsole_tls_cert_file = "/x.pem"\n')
    done = _serve(config)
    assert done.returncode == 2 and "config error: console_tls_key_file" in done.stderr
