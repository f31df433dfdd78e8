"""Issue 14 item 7: ask the real Codex 0.169 binary which amendment it proposes.

One `codex app-server` runs on a scripted Responses endpoint (tests/integration/
codex_app_server.py); each case is a turn whose model calls `exec_command` with
`require_escalated` and a `prefix_rule` hint, under on-request + workspace-write. Codex's
`proposedExecpolicyAmendment` must equal shellgate's for the same call and the recorded
table the unit test checks without codex. By default a lean subset is asked (the issue's
twelve, the ordinary commands, every eighth other candidate); `SHELLGATE_AMENDMENT_TABLE=FILE`
asks the whole corpus and writes the table there (copy it over
tests/unit/amendment_oracle/codex_0_169.jsonl to record a new Codex version).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.amendment_corpus import (
    ORDINARY,
    TWELVE,
    Answer,
    Case,
    corpus,
    load_table,
    row,
    shellgate_answer,
)
from tests.integration.codex_app_server import CodexAppServer
from tests.integration.test_policy_differential import CODEX

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(not CODEX.exists(), reason=f"codex CLI not installed at {CODEX}"),
]

REGENERATE = os.environ.get("SHELLGATE_AMENDMENT_TABLE")


def _lean() -> tuple[Case, ...]:
    twelve = {tuple(p.split(" ")) for p in TWELVE}
    hinted = [c for c in corpus() if c not in ORDINARY]
    rest = [c for c in hinted if c.prefix_rule not in twelve]
    return tuple(c for c in hinted if c.prefix_rule in twelve) + tuple(rest[::8]) + ORDINARY


@pytest.mark.timeout(600)
def test_codex_proposes_what_shellgate_proposes(tmp_path: Path) -> None:
    cases = corpus() if REGENERATE else _lean()
    recorded = dict(load_table())
    server = CodexAppServer(CODEX, tmp_path / "codex-home", tmp_path / "work")
    try:
        answers = []
        for case in cases:
            proposal = server.propose("exec_command", case.args())
            answers.append((case, Answer(proposal.asked, proposal.amendment)))
    finally:
        server.close()
    if REGENERATE:
        lines = [json.dumps(row(case, codex)) for case, codex in answers]
        Path(REGENERATE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    mismatched = [(c, codex, shellgate_answer(c)) for c, codex in answers
                  if shellgate_answer(c) != codex]  # fmt: skip
    assert not mismatched
    if not REGENERATE:
        stale = [(c, codex, recorded.get(c)) for c, codex in answers if recorded.get(c) != codex]
        assert not stale, "the recorded table no longer matches this codex binary"
    # The oracle discriminates: Codex declined the twelve and offered narrow hints as given.
    by_case = dict(answers)
    for prefix in TWELVE:
        words = tuple(prefix.split(" "))
        assert by_case[Case((*words, "x"), words)] == Answer(True, (*words, "x")), prefix
    assert by_case[Case(("touch", "x"), ("touch",))] == Answer(True, ("touch",))
