"""Amendments are appended under a lock: writer processes and threads at once never
interleave or lose a line (moved from tests/unit/test_policy_store.py: it starts processes)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from shellgate.router.service.rules_store import append_rule_line

from tests.paths import REPO_ROOT


def _append_many(path: str, worker: int) -> None:
    for i in range(20):
        append_rule_line(Path(path), f'prefix_rule(pattern=["w{worker}", "{i}"], decision="allow")')
        append_rule_line(Path(path), 'prefix_rule(pattern=["shared"], decision="allow")')


def test_concurrent_writers_never_interleave_or_lose_lines(tmp_path: Path) -> None:
    path = tmp_path / "rules" / "default.rules"
    code = "import sys; from tests.integration.test_policy_store_writers import _append_many as f; f(sys.argv[1], int(sys.argv[2]))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path), str(w)], cwd=REPO_ROOT)
        for w in range(3)
    ]
    threads = [threading.Thread(target=_append_many, args=(str(path), w)) for w in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for p in procs:
        assert p.wait(timeout=60) == 0
    lines = path.read_text().splitlines()
    assert lines.count('prefix_rule(pattern=["shared"], decision="allow")') == 1
    assert len(lines) == 5 * 20 + 1
    assert all(line.startswith("prefix_rule(pattern=[") for line in lines)
