"""A real `shellgate eval` process answers every vector exactly as its loop does in-process,
so tests/unit/test_vectors.py may compare the in-process answers with the vectors."""

from __future__ import annotations

import io
import subprocess
import sys

from shellgate.router.cli.eval import answer_stream

from tests.unit.test_vectors import CASES, eval_payload


def test_the_eval_process_answers_every_vector_as_the_in_process_loop() -> None:
    payload = eval_payload(CASES)
    proc = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli.main", "eval"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    in_process = io.StringIO()
    assert answer_stream(io.StringIO(payload), in_process) == 0
    assert proc.stdout.count("\n") == len(CASES), proc.stderr[-2000:]
    assert proc.stdout == in_process.getvalue()
