"""Issue 14 item 7: shellgate offers exactly the amendments Codex 0.169 offered (recorded).

`tests/unit/amendment_oracle/codex_0_169.jsonl` holds the answers of the real 0.169.0
binary (asked through `codex app-server`; tests/integration/test_amendment_oracle.py
re-asks and regenerates it). This test needs no codex: it projects each recorded call
through shellgate's pipeline and requires the same approval and the same amendment.
"""

from __future__ import annotations

import pytest
from shellgate.router.policy.banned import BANNED_PREFIX_SUGGESTIONS

from tests.integration.amendment_corpus import (
    TWELVE,
    Answer,
    Case,
    corpus,
    load_table,
    shellgate_answer,
)

RECORDED = load_table()


def _banned_by_codex() -> set[tuple[str, ...]]:
    """Hints Codex declined: it offered something other than the hint on `hint + ["x"]`."""
    return {
        case.prefix_rule
        for case, answer in RECORDED
        if case.prefix_rule is not None
        and case.words == (*case.prefix_rule, "x")
        and answer.amendment != case.prefix_rule
    }


@pytest.mark.parametrize(("case", "codex"), RECORDED, ids=lambda v: " ".join(v.words)
                         if isinstance(v, Case) else "")  # fmt: skip
def test_shellgate_offers_what_codex_offered(case: Case, codex: Answer) -> None:
    assert shellgate_answer(case) == codex


def test_banned_list_equals_the_prefixes_codex_declined() -> None:
    # The table answers the whole corpus, every entry of banned.py was asked about, and the
    # prefixes Codex declined are exactly banned.py's.
    assert [c for c, _ in RECORDED] == list(corpus())
    asked = {c.prefix_rule for c, _ in RECORDED if c.prefix_rule is not None}
    assert asked >= BANNED_PREFIX_SUGGESTIONS
    assert _banned_by_codex() == BANNED_PREFIX_SUGGESTIONS


def test_the_twelve_broad_prefixes_are_declined_and_narrow_hints_offered() -> None:
    declined = _banned_by_codex()
    assert {tuple(p.split(" ")) for p in TWELVE} <= declined
    # The table is not all refusals: narrow hints were offered as given.
    offered = [c for c, a in RECORDED if c.prefix_rule is not None and a.amendment == c.prefix_rule]
    assert ("touch",) in {c.prefix_rule for c in offered}
    assert len(offered) > 50
