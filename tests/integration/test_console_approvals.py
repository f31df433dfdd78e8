"""Must-show: a person in a real browser decides a headless agent's parked call.

The agent is a gRPC client whose operator-routed Execute parks (its stream stays open);
headless Chromium logs in to the router's console, sees the pending approval with its
command and policy projection, and approves or denies it; the agent's stream then carries
the command's output (or Codex's denial text), and the audit log names the operator. Also:
the caller cannot decide its own call, a decision after the deadline is refused, and with
two replicas sharing Redis the call parked on one is decided in the other's console.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shellgate.v1 import router_pb2

from tests.integration.console_support import (
    BOTH_TOKEN,
    CALLER_TOKEN,
    OPERATOR_TOKEN,
    RULES,
    TOKENS,
    Agent,
    ConsoleRouter,
    Http,
    approvals_table,
    by,
    console_router,
    console_url,
    exec_request,
    kinds,
    login_browser,
    open_console,
    operator_config,
    output_of,
    retry_stale,
    wait_for,
)
from tests.integration.replicas import fleet, start_router_process
from tests.integration.shared_support import REDIS_SERVER

DENIED_TEXT = 'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleRouter]:
    folder = tmp_path_factory.mktemp("console-approvals")
    with console_router(folder, operator_config(folder)) as running:
        yield running


def _printf(thread: str, call_id: str, text: str) -> router_pb2.ExecuteRequest:
    return exec_request(
        thread, {"cmd": f"printf '{text}\\n'", "login": False, "yield_time_ms": 5000}, call_id
    )


def _pending_row(driver: Any, approval_id: str, timeout_s: float = 15) -> Any:
    selector = f'tr.pending-row[data-approval-id="{approval_id}"]'
    return wait_for(
        lambda: driver.find_elements(by().CSS_SELECTOR, selector), timeout_s, "the pending row"
    )[0]


def _click(driver: Any, approval_id: str, button: str) -> str:
    """Click a decision button of the approval's row; the notice shown afterwards."""
    retry_stale(
        lambda: (
            _pending_row(driver, approval_id)
            .find_element(by().CSS_SELECTOR, f"button.{button}")
            .click()
        )
    )
    notice = wait_for(lambda: driver.find_elements(by().ID, "notice"), 15, "the notice")
    return str(notice[0].text)


def _switch_operator(driver: Any, url: str, token: str) -> None:
    if open_console(driver, url):
        driver.find_element(by().ID, "logout").click()
        wait_for(lambda: driver.find_elements(by().ID, "token"), 10, "the login form")
    login_browser(driver, url, token)
    wait_for(lambda: driver.find_elements(by().ID, "operator"), 10, "the dashboard")


def _operator_decisions(router: ConsoleRouter, call_id: str) -> list[dict[str, Any]]:
    return [
        r
        for r in router.audit_records()
        if r.get("type") == "decision"
        and r.get("call_id") == call_id
        and r.get("approval", {}).get("source") == "operator"
    ]


def test_operator_approves_in_the_browser_and_the_agent_gets_the_output(
    router: ConsoleRouter, browser: Any
) -> None:
    agent = Agent(
        router.stub(),
        _printf("agent-approve", "call-approve", "console-approved-output"),
        CALLER_TOKEN,
    )
    approval_id = agent.pending_id()
    _switch_operator(browser, router.url, OPERATOR_TOKEN)
    By = by()

    def shown() -> tuple[str, list[str], str, str, str]:
        row = _pending_row(browser, approval_id)
        return (
            row.find_element(By.CSS_SELECTOR, ".command").text,
            [e.text for e in row.find_elements(By.CSS_SELECTOR, ".segment")],
            " ".join(e.text for e in row.find_elements(By.CSS_SELECTOR, ".rule")),
            row.text,
            row.find_element(By.CSS_SELECTOR, ".countdown").text,
        )

    command, segments, rules, text, countdown = retry_stale(shown)
    assert "console-approved-output" in command
    assert any(s.startswith("printf") for s in segments), segments
    assert "printf" in rules and "prompt" in rules, rules
    assert "printing needs a person" in text
    assert "bot" in text and "local" in text
    assert countdown.endswith("s") and 0 < int(countdown[:-1]) <= 60
    assert _click(browser, approval_id, "approve").startswith("approved")
    events = agent.result()
    event_kinds = kinds(events)
    assert "started" in event_kinds and "output" in event_kinds
    assert event_kinds.index("started") < event_kinds.index("output") < len(event_kinds) - 1
    assert b"console-approved-output" in output_of(events)
    done = events[-1].completed
    assert done.exit_code == 0 and "console-approved-output" in done.output_text
    decisions = wait_for(
        lambda: _operator_decisions(router, "call-approve"), 10, "the audit record"
    )
    assert [(d["decision"], d["approval"]["who"], d["subject"]) for d in decisions] == [
        ("approved", "alice", "bot")
    ]
    # The console's audit section shows it with the operator's name.
    assert open_console(browser, router.url)
    audit = retry_stale(lambda: browser.find_element(By.ID, "audit").text)
    assert "alice" in audit and "approved (operator)" in audit


def test_operator_denies_and_the_agent_gets_codex_denial_text(
    router: ConsoleRouter, browser: Any
) -> None:
    agent = Agent(router.stub(), _printf("agent-deny", "call-deny", "never-printed"), CALLER_TOKEN)
    approval_id = agent.pending_id()
    _switch_operator(browser, router.url, OPERATOR_TOKEN)
    assert _click(browser, approval_id, "deny").startswith("denied")
    events = agent.result()
    assert "started" not in kinds(events)
    done = events[-1].completed
    assert done.output_text == DENIED_TEXT
    assert done.termination == router_pb2.TERMINATION_REASON_REJECTED
    decisions = wait_for(lambda: _operator_decisions(router, "call-deny"), 10, "the audit record")
    assert [(d["decision"], d["approval"]["who"]) for d in decisions] == [("denied", "alice")]


def test_the_caller_cannot_approve_its_own_call_in_the_console(
    router: ConsoleRouter, browser: Any
) -> None:
    agent = Agent(router.stub(), _printf("agent-self", "call-self", "self-approved"), BOTH_TOKEN)
    approval_id = agent.pending_id()
    _switch_operator(browser, router.url, BOTH_TOKEN)
    notice = _click(browser, approval_id, "approve")
    assert notice.startswith("refused:") and "decide a call it made itself" in notice
    # Still parked; another operator decides it.
    assert "completed" not in kinds(agent.events)
    _switch_operator(browser, router.url, OPERATOR_TOKEN)
    assert _click(browser, approval_id, "deny").startswith("denied")
    assert agent.result()[-1].completed.output_text == DENIED_TEXT
    decisions = wait_for(lambda: _operator_decisions(router, "call-self"), 10, "the audit record")
    assert [(d["decision"], d["approval"]["who"], d["subject"]) for d in decisions] == [
        ("denied", "alice", "carol")
    ]


def test_a_decision_after_the_deadline_is_refused(tmp_path: Path) -> None:
    with console_router(tmp_path, operator_config(tmp_path, deadline_ms=1_500)) as router:
        agent = Agent(router.stub(), _printf("agent-late", "call-late", "too-late"), CALLER_TOKEN)
        approval_id = agent.pending_id()
        http = Http(router.url)
        assert http.login(OPERATOR_TOKEN)[0] == 200
        csrf = http.csrf()
        # The deadline fallback (deny) answers the agent with Codex's rejection text.
        assert agent.result()[-1].completed.output_text == DENIED_TEXT
        status, _, _ = http.request(
            f"/approvals/{approval_id}", {"decision": "approved", "csrf": csrf}
        )
        assert status == 303
        body = http.page()[2]
        assert 'id="notice"' in body and "refused:" in body, body[:800]
        assert "approved:" not in body
        assert _operator_decisions(router, "call-late") == []


@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")
def test_parked_on_one_replica_decided_in_the_console_of_another(
    tmp_path: Path, browser: Any
) -> None:
    (tmp_path / "tokens").write_text(TOKENS)
    extra = (
        f'token_file = "{tmp_path / "tokens"}"\naudit_log = "{tmp_path / "audit.log"}"\n'
        'console_listen = "127.0.0.1:0"\n' + approvals_table()
    )
    with fleet(tmp_path, routers=1, daemons=0, extra_config=extra, rules=RULES) as the_fleet:
        # One audit file has one writer (a second router on it is refused): B has its own.
        config_b = tmp_path / "router-b.toml"
        config_b.write_text(the_fleet.config_path.read_text().replace("audit.log", "audit-b.log"))
        replica_b = start_router_process(config_b, tmp_path, "r1")
        the_fleet.routers.append(replica_b)  # stopped with the fleet
        replica_a = the_fleet.routers[0]
        agent = Agent(
            replica_a.stub, _printf("agent-fleet", "call-fleet", "decided-elsewhere"), CALLER_TOKEN
        )
        approval_id = agent.pending_id()
        url_b = console_url(replica_b)
        assert url_b != console_url(replica_a)
        _switch_operator(browser, url_b, OPERATOR_TOKEN)
        assert _click(browser, approval_id, "approve").startswith("approved")
        events = agent.result()
        assert b"decided-elsewhere" in output_of(events)
        assert events[-1].completed.exit_code == 0
        records = (tmp_path / "audit.log").read_text() + (tmp_path / "audit-b.log").read_text()
        assert '"who":"alice"' in records and "call-fleet" in records
