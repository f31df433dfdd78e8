"""Vector files through `shellgate eval`'s answering loop, in-process (the same loop as a real
`shellgate eval` process: tests/integration/test_eval_process.py).

Three sets share one shape (`{"fn", "input", "expected"}`, spec/README.md "Shapes per
function") and one comparison: the spec's public vectors, and the audit vectors written
from the spec text (`audit_vectors/`: decode, handler, output; `audit_vectors_policy/`:
projections, policy, apply_patch).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from shellgate.router.cli.eval import answer_stream

from tests.paths import SPEC_DIR

HERE = Path(__file__).resolve().parent
VECTOR_SETS = {
    "spec": SPEC_DIR / "vectors",
    "audit": HERE / "audit_vectors",
    "audit-policy": HERE / "audit_vectors_policy",
}


def _load() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for name, folder in VECTOR_SETS.items():
        for path in sorted(folder.glob("*.jsonl")):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if line.strip():
                    cases.append((f"{name}/{path.stem}:{n}", json.loads(line)))
    return cases


CASES = _load()


def test_every_set_is_present() -> None:
    for name, folder in VECTOR_SETS.items():
        assert any(folder.glob("*.jsonl")), f"no vectors in {name} ({folder})"


def eval_payload(cases: list[tuple[str, dict[str, Any]]]) -> str:
    """The JSON lines `shellgate eval` reads for `cases`."""
    return "".join(
        json.dumps({"fn": case["fn"], "input": case["input"]}) + "\n" for _, case in cases
    )


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    """Run all vectors through `shellgate eval`'s loop (`answer_stream`) in this process."""
    out = io.StringIO()
    assert answer_stream(io.StringIO(eval_payload(CASES)), out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == len(CASES)
    return {cid: json.loads(line) for (cid, _), line in zip(CASES, lines, strict=True)}


@pytest.mark.parametrize(("cid", "case"), CASES, ids=[cid for cid, _ in CASES])
def test_vector(cid: str, case: dict[str, Any], answers: dict[str, Any]) -> None:
    got = answers[cid]
    expected = case["expected"]
    if isinstance(expected, dict) and "error_contains" in expected:
        assert "error" in got, f"expected a failure, got {got!r}"
        assert expected["error_contains"] in got["error"]
        if "rendered_contains" in expected:
            assert expected["rendered_contains"] in got.get("rendered", "")
        return
    assert "output" in got, f"{case['fn']} failed: {got.get('error')!r}"
    assert got["output"] == expected
