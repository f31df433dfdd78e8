"""The audit log's chain survives restarts, rotation and a torn last line (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

from shellgate.router.cli.main import main as cli_main
from shellgate.router.service.audit_log import GENESIS, AuditLog, verify_files


def _write(path: Path, count: int, **options: object) -> None:
    log = AuditLog(str(path), **options)  # type: ignore[arg-type]
    for n in range(count):
        log.record({"type": "outcome", "call_id": f"c{n}", "padding": "x" * 100})
    log.close()


def test_chain_continues_across_restart_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    _write(path, 5, max_bytes=1000, keep=5)
    _write(path, 5, max_bytes=1000, keep=5)
    files = [*sorted(tmp_path.glob("audit.log.*"), key=lambda p: -int(p.suffix[1:])), path]
    assert len(files) >= 3, files
    for f in files:
        assert f.stat().st_size <= 1000
    assert verify_files(str(f) for f in files).broken_at is None
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert [r["seq"] for r in records] == list(range(10))
    assert records[0]["prev"] == GENESIS
    # Without the oldest file the rest still verifies from its first line on.
    assert verify_files(str(f) for f in files[1:]).broken_at is None
    # Out of order, the join is reported at the first line of the misplaced file.
    result = verify_files([str(files[1]), str(files[0])])
    assert result.broken_at is not None and result.broken_at[:2] == (str(files[0]), 1)


def test_torn_last_line_is_flagged_then_cut_on_restart(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    _write(path, 3)
    with path.open("ab") as f:
        f.write(b'{"seq":3,"time":"2026')  # a crash in the middle of a write
    result = verify_files([str(path)])
    assert result.broken_at is None and result.partial_tail == (str(path), 4)
    assert cli_main(["audit", "verify", str(path)]) == 0
    _write(path, 2)
    assert verify_files([str(path)]) == verify_files([str(path)])
    result = verify_files([str(path)])
    assert result.broken_at is None and result.partial_tail is None and result.lines == 5


def test_not_a_record_and_tail(tmp_path: Path, capsys: object) -> None:
    path = tmp_path / "audit.log"
    _write(path, 2)
    with path.open("ab") as f:
        f.write(b"hello\n")
    result = verify_files([str(path)])
    assert result.broken_at == (str(path), 3, "not an audit record")
    assert cli_main(["audit", "tail", "-n", "1", str(path)]) == 0
