"""The operator's view of an approval is redacted as a whole, once, for every front.

A secret value of `redact_values_files` sits in the command, the workdir, and the prompt
rule's pattern and justification and a PATH override, so it reaches the view's command,
summary, cwd, reason, segments, matched rules and env overrides; a second call under
`untrusted` carries it in the proposed amendment. A real router process (the console on, an audit log, the webhook posting to a
real HTTP receiver started here) must not show it in any of: the webhook bodies,
ListPendingApprovals, the console's page and the audit log — while each of them does show
the two approvals.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.v1 import approvals_pb2, approvals_pb2_grpc, common_pb2, router_pb2, shell_pb2

from tests.integration.console_support import (
    CALLER_TOKEN,
    OPERATOR_TOKEN,
    Agent,
    Http,
    bearer,
    console_router,
    exec_request,
)
from tests.integration.test_approval_webhook import SECRET as HOOK_SECRET
from tests.integration.test_approval_webhook import _Hook
from tests.waiting import eventually

SECRET = "s3cr3t-Vw9q-planted"
REDACTED = "[REDACTED]"


@pytest.fixture
def hook() -> Iterator[_Hook]:
    receiver = _Hook(200)
    yield receiver
    receiver.close()


def _extra(folder: Path, hook_url: str) -> str:
    (folder / "secrets").write_text(SECRET + "\n")
    (folder / "hook-secret").write_text(HOOK_SECRET.decode() + "\n")
    rules = folder / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "base.rules").write_text(
        f'prefix_rule(pattern=["printf", "{SECRET}"], decision="prompt", '
        f'justification="printing {SECRET} needs a person")\n'
    )
    return (
        f'redact_values_files = ["{folder / "secrets"}"]\n'
        f'rules_dirs = ["{rules}"]\n'
        '[approvals]\ndefault_route = "operator"\noperator_deadline_ms = 60000\n'
        f'[approvals.webhook]\nurl = "{hook_url}"\nsecret_file = "{folder / "hook-secret"}"\n'
        "timeout_ms = 2000\nmax_retries = 1\nretry_backoff_ms = 50\n"
    )


def test_a_planted_secret_reaches_no_front(tmp_path: Path, hook: _Hook) -> None:
    workdir = tmp_path / f"w-{SECRET}"
    workdir.mkdir()
    with console_router(tmp_path, _extra(tmp_path, hook.url)) as router:
        stub = router.stub()
        request = exec_request("redact", {"cmd": f"printf {SECRET}", "workdir": str(workdir),
                                          "login": False}, "c-prompt")  # fmt: skip
        # The secret in a PATH override too: the view's env_overrides show it redacted.
        request.turn.shell_environment_policy.CopyFrom(
            shell_pb2.ShellEnvironmentPolicy(
                inherit=shell_pb2.SHELL_ENVIRONMENT_INHERIT_ALL,
                set={"PATH": f"/opt/{SECRET}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}"},
            )
        )
        prompt = Agent(stub, request, CALLER_TOKEN)
        amend = Agent(
            stub,
            exec_request(
                "redact", {"cmd": f"mkdir -p {SECRET}", "login": False}, "c-amend",
                approval=common_pb2.APPROVAL_POLICY_KIND_UNTRUSTED,
            ),
            CALLER_TOKEN,
        )  # fmt: skip
        ids = {prompt.pending_id(), amend.pending_id()}
        shown: dict[str, str] = {}  # front → everything it showed

        desk = approvals_pb2_grpc.ApprovalServiceStub(router.replica.channel)
        listed = desk.ListPendingApprovals(
            approvals_pb2.ListPendingApprovalsRequest(), metadata=bearer(OPERATOR_TOKEN), timeout=10
        ).approvals
        assert {a.approval_id for a in listed} == ids
        shown["ListPendingApprovals"] = "".join(str(a) for a in listed)

        posted = eventually(
            lambda: _pending_bodies(hook) if len(_pending_bodies(hook)) == 2 else None,
            "both approval_pending POSTs", timeout_s=15,
        )  # fmt: skip
        assert {json.loads(b)["approval"]["approval_id"] for b in posted} == ids
        shown["webhook"] = b"".join(posted).decode()

        console = Http(router.url)
        assert console.login(OPERATOR_TOKEN)[0] == 200
        status, _, page = console.page()
        assert status == 200 and all(f'data-approval-id="{a}"' in page for a in ids)
        shown["console"] = page

        for approval_id in ids:
            desk.DecideApproval(
                approvals_pb2.DecideApprovalRequest(
                    approval_id=approval_id, decision=router_pb2.APPROVAL_DECISION_DENIED
                ),
                metadata=bearer(OPERATOR_TOKEN), timeout=10,
            )  # fmt: skip
        prompt.result()
        amend.result()
    # The router has stopped: its audit file is complete.
    records = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert {r["approval_id"] for r in records if r["type"] == "approval_pending"} == ids
    assert any(r["type"] == "decision" and r["decision"] == "denied" for r in records)
    shown["audit log"] = json.dumps(records, ensure_ascii=False)

    assert [front for front, text in shown.items() if SECRET in text] == []
    assert all(REDACTED in text for text in shown.values())
    # Every field that carried the secret still says something: redacted, not dropped.
    by_call = {a.call_id: a for a in listed}
    view = by_call["c-prompt"]
    texts = [view.command, view.cwd, view.reason, view.summary, *view.segments,
             *view.matched_rules, *view.env_overrides]  # fmt: skip
    assert any(e.startswith(f"PATH=/opt/{REDACTED}/bin:") for e in view.env_overrides), texts
    assert all(REDACTED in text for text in texts), texts
    assert REDACTED in list(by_call["c-amend"].proposed_amendment)


def _pending_bodies(hook: _Hook) -> list[bytes]:
    return [b for h, b in list(hook.received) if h["X-Shellgate-Event"] == "approval_pending"]
