"""The operator's view of a parked call (`approvals/view.build_view`): every text the call
contributes is redacted, in its raw and its escaped forms; without secrets nothing changes;
the stored JSON keeps the decisions' words."""

from __future__ import annotations

import dataclasses
import json
import shlex

from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import parse_policy
from shellgate.router.projection import CommandElement, ShellCall
from shellgate.router.runtime.approvals.desk import PendingView, view_from_json, view_to_json
from shellgate.router.runtime.approvals.view import build_view
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision
from shellgate.router.runtime.call.events import ApprovalKind
from shellgate.router.runtime.call.state import (
    ApprovalSubject,
    AwaitingApproval,
    Call,
    Parked,
    Running,
)
from shellgate.router.service.redaction import REDACTED, Redactor

from tests.integration.runtime_support import call_item, make_turn

# JSON (and Rust's {:?}, which the policy reason uses) escape the quotes; JSON's default
# escapes the ç: the raw value alone would not be found in those texts.
SECRET = 'ç-"s3cret"-9'
RULES = (
    f'prefix_rule(pattern=["printf", {json.dumps(SECRET)}], decision="prompt", '
    f"justification={json.dumps('printing ' + SECRET)})\n"
)


def _awaiting(amendment: tuple[str, ...] | None = None) -> AwaitingApproval:
    cwd = f"/w/{SECRET}"
    turn = make_turn(cwd, approval="on-request")
    host = HostContext(policy=parse_policy(RULES), parent_env={"PATH": "/usr/bin:/bin"})
    item = call_item("exec_command", {"cmd": "printf " + shlex.quote(SECRET), "login": False})
    projected = project(item, turn, host)
    assert isinstance(projected.outcome, ShellCall)
    element = projected.outcome.elements[0]
    assert isinstance(element, CommandElement)
    requirement = element.approval.requirement
    subject = ApprovalSubject(element.envelope.argv, cwd, "local", element)
    parked = Parked(
        ApprovalKind.EXEC_POLICY, 0, getattr(requirement, "reason", ""), amendment, "k" * 64,
        subject,
    )  # fmt: skip
    return AwaitingApproval(Call(projected, turn, 0.0), Running(), parked)


def _view(awaiting: AwaitingApproval, redactor: Redactor | None) -> PendingView:
    return build_view(
        awaiting, approval_id="a-1", caller_subject="bot", created_at_ms=1, deadline_ms=2,
        redact=redactor.json_text if redactor is not None else None,
    )  # fmt: skip


def _texts(view: PendingView) -> dict[str, str]:
    return {
        "command": view.command, "cwd": view.cwd, "summary": view.summary,
        "reason": view.reason, "segments": " ".join(view.segments),
        "matched_rules": " ".join(view.matched_rules),
        "proposed_amendment": " ".join(view.proposed_amendment),
    }  # fmt: skip


def test_every_text_of_the_view_is_redacted_in_every_form() -> None:
    forms = {SECRET, json.dumps(SECRET)[1:-1], json.dumps(SECRET, ensure_ascii=False)[1:-1]}
    plain = _texts(_view(_awaiting(("printf", SECRET)), None))
    # The planted value reaches every text field, in one form or another.
    assert all(any(f in text for f in forms) for text in plain.values()), plain
    redacted = _texts(_view(_awaiting(("printf", SECRET)), Redactor([SECRET])))
    leaked = {name: text for name, text in redacted.items() if any(f in text for f in forms)}
    assert leaked == {}
    assert all(REDACTED in text for text in redacted.values()), redacted


def test_without_secrets_the_view_is_the_call_as_shown() -> None:
    view = _view(_awaiting(), None)
    assert view.command == "printf " + shlex.quote(SECRET)
    assert view.segments == (shlex.join(["printf", SECRET]),)
    words = json.dumps(["printf", SECRET], separators=(",", ":"))
    assert view.matched_rules == (f"prefix_rule({words}) -> prompt",)
    assert view.reason.endswith("printing " + SECRET)
    assert view.available_decisions == (
        ApprovalDecision.APPROVED, ApprovalDecision.APPROVED_FOR_SESSION,
        ApprovalDecision.DENIED, ApprovalDecision.ABORT,
    )  # fmt: skip


def test_stored_json_keeps_the_words_and_reads_back_typed() -> None:
    view = _view(_awaiting(), None)
    text = view_to_json(view)
    data = json.loads(text)
    assert data["available_decisions"] == ["approved", "approved_for_session", "denied", "abort"]
    # The same bytes as a view holding plain strings (what older routers wrote and sealed).
    plain = dataclasses.replace(
        view, available_decisions=tuple(d.value for d in view.available_decisions)
    )
    assert view_to_json(plain) == text
    back = view_from_json(text)
    assert back == view and all(type(d) is ApprovalDecision for d in back.available_decisions)


def test_env_overrides_are_shown_redacted_and_escaped() -> None:
    awaiting = _awaiting()
    element = awaiting.parked.subject.element
    assert isinstance(element, CommandElement)
    overrides = (("LD_PRELOAD", None), ("PATH", f"/ws/{SECRET}/bin\u202e:/usr/bin"))
    subject = dataclasses.replace(
        awaiting.parked.subject, element=dataclasses.replace(element, resolution_env=overrides)
    )
    awaiting = dataclasses.replace(
        awaiting, parked=dataclasses.replace(awaiting.parked, subject=subject)
    )
    plain = _view(awaiting, None)
    assert plain.env_overrides == ("unset LD_PRELOAD", f"PATH=/ws/{SECRET}/bin\\u202e:/usr/bin")
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in plain.hidden_characters
    redacted = _view(awaiting, Redactor([SECRET]))
    assert redacted.env_overrides[1] == f"PATH=/ws/{REDACTED}/bin\\u202e:/usr/bin"
    assert view_from_json(view_to_json(redacted)) == redacted
