"""The console's small parts: the output tap (bounded, drop-oldest), the login table (idle
expiry, cap, hashed keys, CSRF), the failed-login throttle and the same-origin check."""

from __future__ import annotations

import asyncio

from shellgate.router.runtime.output_tap import MAX_INITIAL_BYTES, OutputTap
from shellgate.router.service.console.guard import same_origin
from shellgate.router.service.console.logins import (
    FAILURE_WINDOW_S,
    MAX_FAILURES_PER_WINDOW,
    LoginSessions,
    LoginThrottle,
)
from shellgate.router.service.console.views import audit_tail, clip
from starlette.requests import Request


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tap_drops_the_oldest_chunks_and_ends_after_close() -> None:
    async def run() -> None:
        tap = OutputTap(b"x" * (MAX_INITIAL_BYTES + 10), max_chunks=3)
        assert await tap.next(0) == b"x" * MAX_INITIAL_BYTES
        assert await tap.next(0.01) == b""
        for n in range(5):
            tap.push(f"{n}".encode())
        assert tap.dropped_chunks == 2
        assert await tap.next(0) == b"234"
        tap.push(b"last")
        tap.close()
        tap.push(b"after close")
        assert await tap.next(0) == b"last"
        assert await tap.next(0) is None

    asyncio.run(run())


def test_login_sessions_expire_when_idle_and_are_capped() -> None:
    clock = Clock()
    logins = LoginSessions(idle_s=10, max_sessions=2, clock=clock)
    first = logins.create("alice")
    assert len(first) >= 43 and first not in repr(logins._table)
    session = logins.get(first)
    assert session is not None and session.subject == "alice"
    assert session.csrf_ok(session.csrf_token) and not session.csrf_ok(session.csrf_token + "x")
    clock.now += 9
    assert logins.get(first) is not None  # used: its idle clock restarts
    clock.now += 9
    second, third = logins.create("bob"), logins.create("carol")
    assert logins.get(first) is None  # the cap evicted the least recently used
    assert logins.get(second) is not None and logins.get(third) is not None
    clock.now += 11
    assert logins.get(second) is None and len(logins) == 0
    fourth = logins.create("dave")
    logins.end(fourth)
    assert logins.get(fourth) is None


def test_throttle_refuses_a_peer_for_the_window_only() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(MAX_FAILURES_PER_WINDOW):
        assert not throttle.refused("10.0.0.1")
        throttle.failed("10.0.0.1")
    assert throttle.refused("10.0.0.1") and not throttle.refused("10.0.0.2")
    clock.now += FAILURE_WINDOW_S + 1
    assert not throttle.refused("10.0.0.1")


def _post(headers: dict[str, str]) -> Request:
    raw = [
        (k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8000", **headers}.items()
    ]
    return Request(
        {"type": "http", "method": "POST", "scheme": "http", "path": "/", "headers": raw}
    )


def test_same_origin() -> None:
    assert same_origin(_post({"origin": "http://127.0.0.1:8000", "sec-fetch-site": "same-origin"}))
    assert same_origin(_post({}))
    # Chromium under Referrer-Policy: no-referrer: Origin null, vouched for by Sec-Fetch-Site.
    assert same_origin(_post({"origin": "null", "sec-fetch-site": "same-origin"}))
    assert not same_origin(_post({"origin": "null"}))
    assert not same_origin(_post({"origin": "http://evil.example"}))
    assert not same_origin(_post({"origin": "https://127.0.0.1:8000"}))
    assert not same_origin(_post({"sec-fetch-site": "cross-site"}))
    assert not same_origin(_post({"sec-fetch-site": "same-site"}))


def test_clip_and_audit_tail(tmp_path: object) -> None:
    from pathlib import Path

    assert clip("abc", 3) == "abc" and clip("abcd", 3) == "ab…"
    path = Path(str(tmp_path)) / "audit.log"
    lines = [
        '{"seq":1,"time":"t1","type":"decision","subject":"bot","thread":"t","decision":"approved",'
        '"approval":{"source":"operator","who":"alice"},"command":["echo","<b>"]}',
        "not json",
        '{"seq":2,"time":"t2","type":"outcome","subject":"bot","thread":"t","termination":"exited",'
        '"exit_code":0}',
    ]
    path.write_text("\n".join(lines) + "\n")
    rows = audit_tail(str(path))
    assert [r.seq for r in rows] == ["2", "1"]
    assert rows[1].decided_by == "alice" and rows[1].what == "approved (operator)"
    assert rows[1].command == "echo '<b>'"
    assert rows[0].what == "exited exit=0"
    assert audit_tail("") == [] and audit_tail(str(path) + ".missing") == []
