"""Vector files through `shellgate eval` (one process for all of them).

Three sets share one shape (`{"fn", "input", "expected"}`, spec/README.md "Shapes per
function") and one comparison: the spec's public vectors, and the audit vectors written
from the spec text (`audit_vectors/`: decode, handler, output; `audit_vectors_policy/`:
projections, policy, apply_patch).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    """Run all vectors through one `shellgate eval` process."""
    payload = "".join(
        json.dumps({"fn": case["fn"], "input": case["input"]}) + "\n" for _, case in CASES
    )
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "eval"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == len(CASES), proc.stderr[-2000:]
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
