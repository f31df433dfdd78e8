"""What the approver sees is what runs: a real router with its console, headless Chromium.

* A command disguised with a right-to-left override (`printf ok '<U+202E>' ; touch bidi-X ;#`
  renders as an innocent printf) shows escaped (`\\u202e`), with a hidden-character warning,
  in the console and in ListPendingApprovals (its `hidden_characters` field).
* A command longer than the console's clip, with more segments than it lists, shows the
  clips marked (`… [N more characters]`, `… [N more segments]`) and the whole text one
  click away (the opened "show all" survives the section's refresh); ListPendingApprovals
  carries it whole.
* An apply_patch approval lists every path with its change kind and shows the diff.
* A turn's env override that changes what runs (`PATH=<ws>/bin:…`, where a fake `touch`
  waits) is shown before approval: a highlighted "Environment overrides" block with a risk
  marker in the console, `env_overrides` in ListPendingApprovals.

Screenshots of the disguised command, the patch approval, the env override and the expired
approval go to the folder printed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, common_pb2, router_pb2, shell_pb2

from tests.integration.console_support import (
    CALLER_TOKEN,
    OPERATOR_TOKEN,
    Agent,
    ConsoleRouter,
    artifacts_dir,
    bearer,
    by,
    console_router,
    exec_request,
    login_browser,
    open_console,
    operator_config,
    retry_stale,
)
from tests.router_harness import turn
from tests.waiting import eventually

RLO = "\u202e"
UNTRUSTED = common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED
PATCH = (
    "apply_patch <<'EOF'\n*** Begin Patch\n"
    "*** Add File: new.txt\n+hello\n"
    "*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-one\n+uno\n"
    "*** Delete File: gone.txt\n"
    "*** End Patch\nEOF\n"
)


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleRouter]:
    folder = tmp_path_factory.mktemp("console-what-runs")
    with console_router(folder, operator_config(folder)) as running:
        yield running


def _desk(router: ConsoleRouter) -> approvals_pb2_grpc.ApprovalServiceStub:
    return approvals_pb2_grpc.ApprovalServiceStub(router.replica.channel)


def _listed(router: ConsoleRouter, approval_id: str) -> approvals_pb2.PendingApproval:
    listed = (
        _desk(router)
        .ListPendingApprovals(
            approvals_pb2.ListPendingApprovalsRequest(), metadata=bearer(OPERATOR_TOKEN), timeout=10
        )
        .approvals
    )
    found = [a for a in listed if a.approval_id == approval_id]
    assert found, [a.approval_id for a in listed]
    return found[0]


def _deny(router: ConsoleRouter, approval_id: str) -> None:
    _desk(router).DecideApproval(
        approvals_pb2.DecideApprovalRequest(
            approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_DENIED
        ),
        metadata=bearer(OPERATOR_TOKEN),
        timeout=10,
    )


def _park(
    router: ConsoleRouter, thread: str, cmd: str, workdir: Path, **turn: Any
) -> tuple[Agent, str]:
    agent = Agent(
        router.stub(),
        exec_request(
            thread, {"cmd": cmd, "login": False, "workdir": str(workdir)}, f"{thread}-c", **turn
        ),
        CALLER_TOKEN,
    )
    return agent, agent.pending_id()


def _row_text(driver: Any, approval_id: str, css: str = "") -> str:
    """The rendered (visible) text of a pending row, or of an element in it."""
    selector = f'tr.pending-row[data-approval-id="{approval_id}"] {css}'.strip()

    def read() -> str:
        found = driver.find_elements(by().CSS_SELECTOR, selector)
        return str(found[0].text) if found else ""

    return str(retry_stale(read))


def _console(driver: Any, router: ConsoleRouter, approval_id: str) -> str:
    if not open_console(driver, router.url):
        login_browser(driver, router.url, OPERATOR_TOKEN)
    return str(eventually(lambda: _row_text(driver, approval_id), "the pending row", timeout_s=15))


def _screenshot(driver: Any, name: str) -> Path:
    shot = artifacts_dir() / name
    assert driver.save_screenshot(str(shot))
    print(f"screenshot: {shot} (folder {artifacts_dir()})")
    return shot


def test_a_bidi_disguised_command_shows_escaped_with_a_warning(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    cmd = f"printf ok '{RLO}' ; touch bidi-X ;#"
    agent, approval_id = _park(router, "bidi", cmd, tmp_path)
    # The wire: the escaped text, and what was hidden.
    listed = _listed(router, approval_id)
    assert RLO not in str(listed)
    assert listed.command == "printf ok '\\u202e' ; touch bidi-X ;#"
    assert list(listed.hidden_characters) == ["U+202E RIGHT-TO-LEFT OVERRIDE"]
    assert any("touch bidi-X" in s for s in listed.segments)
    # The console: the rendered command reads as what runs; the warning is shown.
    text = _console(browser, router, approval_id)
    command = _row_text(browser, approval_id, "code.command")
    assert command == "printf ok '\\u202e' ; touch bidi-X ;#", command
    assert RLO not in text
    warning = _row_text(browser, approval_id, ".hidden-warning")
    assert "Hidden characters" in warning and "U+202E RIGHT-TO-LEFT OVERRIDE" in warning
    # Judged at a glance: a risk marker, and why it asks in plain words.
    assert "hidden characters" in _row_text(browser, approval_id, ".risks")
    assert "A rule of this router asks a person" in _row_text(browser, approval_id, ".why")
    _screenshot(browser, "console-bidi-disguised-command.png")
    _deny(router, approval_id)
    assert "rejected by user" in agent.result()[-1].completed.output_text
    assert not (tmp_path / "bidi-X").exists()
    # The audit tail on the console shows the decided command escaped as well.
    audit = eventually(
        lambda: (t := _section_text(browser, "audit")) and "touch bidi-X" in t and t,
        "the audit row",
        timeout_s=15,
    )
    assert RLO not in audit and "\\u202e" in audit


def _section_text(driver: Any, section: str) -> str:
    def read() -> str:
        found = driver.find_elements(by().ID, section)
        return str(found[0].text) if found else ""

    return str(retry_stale(read))


def test_a_clipped_command_marks_its_clips_and_shows_all_on_a_click(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    By = by()
    cmd = "printf " + "a" * 2100 + " ; " + "true ; " * 25 + "touch segs-X"
    agent, approval_id = _park(router, "clip", cmd, tmp_path)
    # The wire carries it whole.
    listed = _listed(router, approval_id)
    assert listed.command == cmd
    assert len(listed.segments) == 27 and listed.segments[-1] == "touch segs-X"
    text = _console(browser, router, approval_id)
    # Clipped, and the clips say so; the tail is not on screen yet.
    command = _row_text(browser, approval_id, "code.command")
    assert command.endswith(f"… [{len(cmd) - 2000} more characters]"), command[-80:]
    assert "… [7 more segments]" in text
    assert "touch segs-X" not in command
    assert "touch segs-X" not in _row_text(browser, approval_id, "div.segments")
    # One click shows the whole command; another all the segments.
    for css in ("details.full-command summary", "details.all-segments summary"):
        retry_stale(
            lambda css=css: browser.find_element(
                By.CSS_SELECTOR, f'tr.pending-row[data-approval-id="{approval_id}"] {css}'
            ).click()
        )
    full = _row_text(browser, approval_id, "details.full-command pre.full")
    assert full == cmd
    segments = _row_text(browser, approval_id, "details.all-segments")
    assert "touch segs-X" in segments
    # The pending section refreshes every second: what was opened stays open.
    time.sleep(2.5)
    assert _row_text(browser, approval_id, "details.full-command pre.full") == cmd
    assert "touch segs-X" in _row_text(browser, approval_id, "details.all-segments")
    _deny(router, approval_id)
    assert "rejected by user" in agent.result()[-1].completed.output_text
    assert not (tmp_path / "segs-X").exists()


def _freeform_patch(router: ConsoleRouter, thread: str, workdir: Path) -> tuple[Agent, str]:
    """The freeform `apply_patch` tool (a custom tool call: no shell command at all)."""
    body = PATCH.split("\n", 1)[1].rsplit("EOF\n", 1)[0]
    raw = json.dumps(
        {"type": "custom_tool_call", "name": "apply_patch", "call_id": f"{thread}-c", "input": body}
    )
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(approval=UNTRUSTED, cwd=str(workdir)),
        item=common_pb2.ToolCallItem(raw_json=raw),
    )
    agent = Agent(router.stub(), request, CALLER_TOKEN)
    return agent, agent.pending_id()


@pytest.mark.parametrize("tool", ["exec_command", "freeform"])
def test_a_patch_approval_shows_each_path_and_the_diff(
    router: ConsoleRouter, browser: Any, tmp_path: Path, tool: str
) -> None:
    (tmp_path / "old.txt").write_text("one\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    if tool == "freeform":
        agent, approval_id = _freeform_patch(router, "patch-free", tmp_path)
    else:
        agent, approval_id = _park(router, "patch", PATCH, tmp_path, approval=UNTRUSTED)
    files = [
        f"add {tmp_path / 'new.txt'}",
        f"move {tmp_path / 'old.txt'} -> {tmp_path / 'moved.txt'}",
        f"delete {tmp_path / 'gone.txt'}",
    ]
    listed = _listed(router, approval_id)
    assert list(listed.patch_files) == files
    for line in ("+hello", "-one", "+uno", "-bye", f"+++ {tmp_path / 'moved.txt'}"):
        assert line in listed.patch_diff, (line, listed.patch_diff)
    assert "3 file(s)" in listed.summary
    _console(browser, router, approval_id)
    shown = _row_text(browser, approval_id, ".patch-files")
    assert all(f in shown for f in files), shown
    diff = _row_text(browser, approval_id, "pre.patch-diff")
    assert all(line in diff for line in ("+hello", "-one", "+uno", "-bye")), diff
    risks = _row_text(browser, approval_id, ".risks")
    assert "writes files" in risks and "deletes files" in risks, risks
    _screenshot(browser, f"console-patch-approval-{tool}.png")
    _deny(router, approval_id)
    assert "rejected" in agent.result()[-1].completed.output_text
    assert (tmp_path / "old.txt").read_text() == "one\n" and not (tmp_path / "new.txt").exists()


def test_a_path_override_is_shown_before_approval(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "touch").write_text('#!/bin/sh\necho fake > "$PWD/fake-ran"\n')
    (fake / "touch").chmod(0o755)
    path = f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    request = exec_request(
        "envpath",
        {"cmd": "touch notes.txt", "login": False, "workdir": str(tmp_path)},
        "envpath-c",
        approval=UNTRUSTED,
    )
    request.turn.shell_environment_policy.CopyFrom(
        shell_pb2.ShellEnvironmentPolicy(
            inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL, set={"PATH": path}
        )
    )
    agent = Agent(router.stub(), request, CALLER_TOKEN)
    approval_id = agent.pending_id()
    assert f"PATH={path}" in list(_listed(router, approval_id).env_overrides)
    _console(browser, router, approval_id)
    block = _row_text(browser, approval_id, ".env-overrides")
    assert "Environment overrides" in block and f"PATH={fake}:" in block, block
    assert "env overrides change what runs" in _row_text(browser, approval_id, ".risks")
    _screenshot(browser, "console-env-override.png")
    _deny(router, approval_id)
    assert "rejected" in agent.result()[-1].completed.output_text
    assert not (tmp_path / "fake-ran").exists() and not (tmp_path / "notes.txt").exists()


def _audit_rows(driver: Any) -> list[str]:
    return list(
        retry_stale(
            lambda: [str(e.text) for e in driver.find_elements(by().CSS_SELECTOR, "tr.audit-row")]
        )
    )


def test_audit_rows_show_the_command_and_readable_log_records(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    agent, approval_id = _park(router, "auditrows", "printf audit-row-X", tmp_path)
    _console(browser, router, approval_id)

    def pending_row() -> str:
        rows = [r for r in _audit_rows(browser) if "approval_pending" in r]
        return next((r for r in rows if "printf audit-row-X" in r), "")

    row = eventually(pending_row, "the approval_pending audit row", timeout_s=15)
    assert "waits for an operator (exec_policy)" in row and "()" not in row, row
    decision = next(r for r in _audit_rows(browser) if r.split(" ")[2:3] == ["decision"])
    assert "printf audit-row-X" in decision and "/bin/" not in decision, decision
    rows = _audit_rows(browser)
    started = [r for r in rows if "log started" in r]
    assert started and "router started (pid" in started[-1] and "()" not in started[-1], rows
    _deny(router, approval_id)
    assert "rejected by user" in agent.result()[-1].completed.output_text
    # The outcome names the tool and the command digest (it carries no command text).
    outcome = eventually(
        lambda: next((r for r in _audit_rows(browser) if " outcome " in r), ""),
        "the outcome audit row",
        timeout_s=15,
    )
    assert "exec_command " in outcome, outcome


def _thread_rows(driver: Any, css: str) -> list[str]:
    return list(
        retry_stale(lambda: [str(e.text) for e in driver.find_elements(by().CSS_SELECTOR, css)])
    )


def test_finished_threads_are_folded_away(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    agent, approval_id = _park(router, "archive-me", "printf archived", tmp_path)
    _console(browser, router, approval_id)
    # Waiting for a decision: listed among the live threads.
    eventually(
        lambda: any("archive-me" in r for r in _thread_rows(browser, "tr.thread-row")),
        "the waiting thread among the live ones",
        timeout_s=15,
    )
    _deny(router, approval_id)
    assert "rejected by user" in agent.result()[-1].completed.output_text
    # Done (no call, no approval, no session): out of the live list, under a folded list.
    eventually(
        lambda: not any("archive-me" in r for r in _thread_rows(browser, "tr.thread-row")),
        "the finished thread to leave the live list",
        timeout_s=15,
    )
    folded = retry_stale(
        lambda: browser.find_element(by().CSS_SELECTOR, "#threads details.finished-threads")
    )
    assert folded.get_attribute("open") is None
    assert "finished (" in str(retry_stale(lambda: folded.text))
    # Collapsed: its rows are not shown until it is opened.
    assert not any("archive-me" in r for r in _thread_rows(browser, "tr.finished-thread-row"))
    retry_stale(
        lambda: browser.find_element(
            by().CSS_SELECTOR, "#threads details.finished-threads summary"
        ).click()
    )
    eventually(
        lambda: any("archive-me" in r for r in _thread_rows(browser, "tr.finished-thread-row")),
        "the finished thread in the opened list",
        timeout_s=10,
    )


def test_approve_with_amendment_is_confirmed_first(
    router: ConsoleRouter, browser: Any, tmp_path: Path
) -> None:
    By = by()
    agent, approval_id = _park(
        router, "amend", f"mkdir -p {tmp_path / 'made'}", tmp_path, approval=UNTRUSTED
    )
    assert list(_listed(router, approval_id).proposed_amendment)[:2] == ["mkdir", "-p"]
    _console(browser, router, approval_id)
    selector = f'tr.pending-row[data-approval-id="{approval_id}"] button.approve-amendment'
    retry_stale(lambda: browser.find_element(By.CSS_SELECTOR, selector).click())
    alert = eventually(lambda: _alert(browser), "the confirmation")
    assert "runs without asking anyone" in alert.text and "mkdir -p" in alert.text
    alert.dismiss()
    # Dismissed: nothing was decided, the call still waits.
    time.sleep(1)
    assert _listed(router, approval_id).approval_id == approval_id
    _deny(router, approval_id)
    assert "rejected by user" in agent.result()[-1].completed.output_text
    assert not (tmp_path / "made").exists()


def _alert(driver: Any) -> Any:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
        _ = alert.text
        return alert
    except NoAlertPresentException:
        return None


def test_the_start_banner_names_the_console_url(router: ConsoleRouter) -> None:
    assert f"  console: {router.url}/ (log in with an operator token)" in router.replica.log()


def test_an_approval_past_its_deadline_says_expired_denied(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    folder = tmp_path_factory.mktemp("console-expiry")
    with console_router(folder, operator_config(folder, deadline_ms=4_000), "expiry") as short:
        agent, approval_id = _park(short, "expire", "printf late", tmp_path)
        browser.delete_all_cookies()
        _console(browser, short, approval_id)
        notice = eventually(
            lambda: "\n".join(
                e.text for e in browser.find_elements(by().CSS_SELECTOR, ".expired-notice")
            ),
            "the expiry notice",
            timeout_s=15,
        )
        assert "expired → denied" in notice and "printf late" in notice, notice
        _screenshot(browser, "console-expired-approval.png")
        assert "rejected by user" in agent.result()[-1].completed.output_text
