"""The console's small parts: the output tap (bounded, drop-oldest), the login table (idle
expiry, cap, hashed keys, CSRF token and page key), the failed-login throttle (per account,
and the global bound that only slows) and the same-origin check."""

from __future__ import annotations

import asyncio

from shellgate.common.http_guard import HostGuard
from shellgate.router.runtime.threads.output_tap import MAX_INITIAL_BYTES, OutputTap
from shellgate.router.service.console.guard import console_guard, same_origin
from shellgate.router.service.console.logins import (
    FAILURE_WINDOW_S,
    GLOBAL_SLOW_AFTER,
    MAX_FAILURES_PER_ACCOUNT,
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
    first, created = logins.create("alice")
    assert len(first) >= 43 and first not in repr(logins._table)
    session = logins.get(first)
    assert session is not None and session.subject == "alice" and session == created
    assert session.csrf_ok(session.csrf_token) and not session.csrf_ok(session.csrf_token + "x")
    assert session.key_ok(session.page_key) and not session.key_ok(session.page_key[:-1])
    assert not session.key_ok("") and not session.key_ok(session.csrf_token)
    assert len(session.page_key) >= 43 and session.page_key not in (first, session.csrf_token)
    clock.now += 9
    assert logins.get(first) is not None  # used: its idle clock restarts
    clock.now += 9
    (second, _), (third, _) = logins.create("bob"), logins.create("carol")
    assert logins.get(first) is None  # the cap evicted the least recently used
    assert logins.get(second) is not None and logins.get(third) is not None
    clock.now += 9.5
    assert logins.get(second, touch=False) is not None  # looked at, not used
    clock.now += 1
    assert logins.get(second) is None and len(logins) == 0
    fourth, _ = logins.create("dave")
    logins.end(fourth)
    assert logins.get(fourth) is None


def test_throttle_refuses_an_account_for_the_window_only() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(MAX_FAILURES_PER_ACCOUNT):
        assert not throttle.refused("alice")
        throttle.failed("alice")
    assert throttle.refused("alice") and not throttle.refused("bob")
    assert not throttle.slowed()
    clock.now += FAILURE_WINDOW_S + 1
    assert not throttle.refused("alice")


def test_failures_over_many_accounts_slow_logins_and_refuse_none() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for n in range(GLOBAL_SLOW_AFTER - 1):
        throttle.failed(f"name-{n}")
        clock.now += 0.1
    assert not throttle.slowed()
    throttle.failed("one-more")
    assert throttle.slowed()
    assert not any(throttle.refused(f"name-{n}") for n in range(GLOBAL_SLOW_AFTER))
    assert not throttle.refused("alice")
    # The bound is a window too: once the failures age out, logins are quick again.
    clock.now += FAILURE_WINDOW_S
    assert not throttle.slowed()


def _post(headers: dict[str, str]) -> Request:
    raw = [
        (k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8000", **headers}.items()
    ]
    return Request(
        {"type": "http", "method": "POST", "scheme": "http", "path": "/", "headers": raw}
    )


def test_same_origin() -> None:
    guard = console_guard("127.0.0.1:0", 8000, (), tls=False)
    assert guard == HostGuard.serving("127.0.0.1", 8000)

    def ok(headers: dict[str, str]) -> bool:
        return same_origin(_post(headers), guard)

    assert ok({"origin": "http://127.0.0.1:8000", "sec-fetch-site": "same-origin"})
    assert ok({})
    # Chromium under Referrer-Policy: no-referrer: Origin null, vouched for by Sec-Fetch-Site.
    assert ok({"origin": "null", "sec-fetch-site": "same-origin"})
    assert not ok({"origin": "null"})
    assert not ok({"origin": "http://evil.example"})
    assert not ok({"origin": "https://127.0.0.1:8000"})
    # Another port of this host is another origin (another local user's service).
    assert not ok({"origin": "http://127.0.0.1:8001", "sec-fetch-site": "same-site"})
    assert not ok({"origin": "http://localhost:8001"})
    assert not ok({"sec-fetch-site": "cross-site"})
    assert not ok({"sec-fetch-site": "same-site"})


def test_console_hosts_are_names_on_the_consoles_own_port() -> None:
    guard = console_guard("[::1]:8451", 8451, ("ops.example.com",), tls=True)
    assert guard.host_allowed("ops.example.com:8451") and guard.host_allowed("localhost:8451")
    assert not guard.host_allowed("ops.example.com:9000")
    assert guard.origin_allowed("https://ops.example.com:8451")
    wildcard = console_guard("0.0.0.0:8451", 8451, ("ops.example.com",), tls=True)
    assert wildcard.host_allowed("ops.example.com:8451")
    assert not wildcard.host_allowed("localhost:8451")


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


def test_audit_tail_names_the_command_and_labels_log_records(tmp_path: object) -> None:
    import json
    from pathlib import Path

    path = Path(str(tmp_path)) / "audit.log"
    records = [
        {"seq": 0, "type": "start", "chain": "c" * 32, "pid": 42, "host": "vm"},
        {"seq": 1, "type": "decision", "decision": "ask", "approval": {"source": "policy"},
         "tool": "exec_command", "command": ["/bin/bash", "-c", "printf late"]},
        {"seq": 2, "type": "approval_pending", "kind": "exec_policy", "tool": "exec_command",
         "command": "printf late"},
        {"seq": 3, "type": "outcome", "termination": "exited", "exit_code": 0,
         "tool": "exec_command", "command_digest": "ab" * 32},
        {"seq": 4, "type": "rotate", "chain": "c" * 32},
        {"seq": 5, "type": "checkpoint", "chain": "c" * 32, "seq_": 0},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    rows = {r.seq: r for r in audit_tail(str(path))}
    assert rows["0"].kind == "log started" and rows["0"].what.startswith("router started (pid 42")
    assert rows["0"].command == "" and "()" not in rows["0"].what
    assert rows["1"].command == "printf late" and rows["1"].what == "ask (policy)"
    assert (
        rows["2"].command == "printf late"
        and rows["2"].what == "waits for an operator (exec_policy)"
    )
    assert rows["3"].command == "exec_command " + "ab" * 8
    assert rows["4"].kind == "log rotated" and "()" not in rows["4"].what
    assert rows["5"].kind == "checkpoint" and "()" not in rows["5"].what


def test_a_thread_is_finished_with_no_call_approval_or_live_session() -> None:
    from shellgate.router.service.console.views import SessionRow, ThreadRow

    def session(running: bool) -> SessionRow:
        return SessionRow("k", "t", "bot", 1, "local", "sleep 9", running, None if running else 0)

    assert ThreadRow("k", "t", "bot", 0, 0, ()).finished
    assert ThreadRow("k", "t", "bot", 0, 0, (session(False),)).finished
    assert not ThreadRow("k", "t", "bot", 1, 0, ()).finished
    assert not ThreadRow("k", "t", "bot", 0, 1, ()).finished
    assert not ThreadRow("k", "t", "bot", 0, 0, (session(True),)).finished
