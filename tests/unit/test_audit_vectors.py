"""Audit vectors (tests/unit/audit_vectors/*.jsonl) through `shellgate eval`.

Same shape and comparison as the public spec vectors (tests/unit/test_vectors.py): one
case per spec rule, example, table row, error text and clamp found in the audit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

AUDIT_DIR = Path(__file__).resolve().parent / "audit_vectors"


def _load() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(AUDIT_DIR.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                cases.append((f"{path.stem}:{n}", json.loads(line)))
    return cases


CASES = _load()


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    """Run all audit vectors through one `shellgate eval` process."""
    payload = "".join(
        json.dumps({"fn": case["fn"], "input": case["input"]}) + "\n" for _, case in CASES
    )
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli", "eval"],
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
def test_audit_vector(cid: str, case: dict[str, Any], answers: dict[str, Any]) -> None:
    got = answers[cid]
    expected = case["expected"]
    if isinstance(expected, dict) and "error_contains" in expected:
        assert "error" in got, f"expected a failure, got {got!r}"
        assert expected["error_contains"] in got["error"]
        return
    assert "output" in got, f"{case['fn']} failed: {got.get('error')!r}"
    assert got["output"] == expected
