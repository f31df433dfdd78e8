"""The audit log's signed chain: restarts, rotation, a torn last line, checkpoints, the
writer's lock and its key file (issues 19 and "the audit log proves it")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.config_schema import ConfigError
from shellgate.router.cli.main import main as cli_main
from shellgate.router.service.audit_files import AuditLogBusy
from shellgate.router.service.audit_format import (
    GENESIS,
    AuditSigner,
    load_public_key,
    load_signing_key,
)
from shellgate.router.service.audit_log import AuditLog
from shellgate.router.service.audit_verify import read_checkpoints, verify_files

from tests.audit_keys import make_key
from tests.waiting import eventually


def _write(path: Path, count: int, signer: AuditSigner | None = None, **options: Any) -> None:
    log = AuditLog(str(path), signer=signer, **options)
    for n in range(count):
        log.record({"type": "outcome", "call_id": f"c{n}", "padding": "x" * 100})
    log.close()


def _files(path: Path) -> list[Path]:
    rotated = sorted(path.parent.glob(f"{path.name}.*"), key=lambda p: -int(p.suffix[1:]))
    return [*rotated, path]


def _records(files: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def test_chain_continues_across_restart_and_rotation(tmp_path: Path) -> None:
    key, public = make_key(tmp_path)
    signer = load_signing_key(str(key))
    path = tmp_path / "audit.log"
    _write(path, 5, signer, max_bytes=1500, keep=10)
    _write(path, 5, signer, max_bytes=1500, keep=10)
    files = _files(path)
    assert len(files) >= 3, files
    for f in files:
        assert f.stat().st_size <= 1500
    keys = [load_public_key(str(public))]
    result = verify_files([str(f) for f in files], keys=keys)
    assert result.broken_at is None and result.anchor == "genesis"
    assert result.key_id == signer.key_id
    records = _records(files)
    assert [r["seq"] for r in records] == list(range(len(records)))
    # The first start names no head; the second names the line before it.
    starts = [r for r in records if r["type"] == "start"]
    assert starts[0]["seq"] == 0 and starts[0]["prev"] == GENESIS and starts[0]["head"] is None
    assert starts[1]["head"] == {"seq": starts[1]["seq"] - 1, "hash": starts[1]["prev"]}
    # Every file begins with a start or rotate record of the one chain.
    for f in files:
        first = json.loads(f.read_text().splitlines()[0])
        assert first["type"] in ("start", "rotate") and first["chain"] == starts[0]["chain"]
    assert [r["type"] for r in records].count("outcome") == 10
    # Without the oldest file the chain begins where no kept file does: head truncated.
    result = verify_files([str(f) for f in files[1:]], keys=keys)
    assert result.broken_at is not None and "head truncated" in result.broken_at[2]
    # Out of order, the join is reported at the first line of the misplaced file.
    result = verify_files([str(files[1]), str(files[0])], keys=keys)
    assert result.broken_at is not None and result.broken_at[:2] == (str(files[0]), 1)


def test_rotation_drops_the_oldest_and_says_where_the_kept_files_begin(tmp_path: Path) -> None:
    key, public = make_key(tmp_path)
    path = tmp_path / "audit.log"
    _write(path, 30, load_signing_key(str(key)), max_bytes=800, keep=2)
    files = _files(path)
    assert [f.name for f in files] == ["audit.log.2", "audit.log.1", "audit.log"]
    result = verify_files([str(f) for f in files], keys=[load_public_key(str(public))])
    first = json.loads(files[0].read_text().splitlines()[0])
    assert result.broken_at is None and result.anchor == f"seq {first['seq']}" != "seq 0"
    last_rotate = [r for r in _records(files) if r["type"] == "rotate"][-1]
    assert last_rotate["kept_from"] == first["seq"] and len(last_rotate["files"]) == 3


def test_torn_last_line_is_flagged_then_cut_on_restart(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    _write(path, 3)
    with path.open("ab") as f:
        f.write(b'{"seq":4,"time":"2026')  # a crash in the middle of a write
    result = verify_files([str(path)])
    assert result.broken_at is None and result.partial_tail == (str(path), 5)
    assert cli_main(["audit", "verify", "--unsigned", str(path)]) == 0
    _write(path, 2)
    result = verify_files([str(path)])
    # A start and 3 records, then a start and 2 records.
    assert result.broken_at is None and result.partial_tail is None and result.lines == 7


def test_not_a_record_and_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.log"
    _write(path, 2)
    with path.open("ab") as f:
        f.write(b"hello\n")
    result = verify_files([str(path)])
    assert result.broken_at == (str(path), 4, "not an audit record")
    assert cli_main(["audit", "tail", "-n", "4", str(path)]) == 0
    assert "a new chain" in capsys.readouterr().out


def test_verify_needs_a_key_or_says_it_checks_only_the_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.log"
    _write(path, 2)
    assert cli_main(["audit", "verify", str(path)]) == 2
    assert "give --key FILE" in capsys.readouterr().err
    assert cli_main(["audit", "verify", "--unsigned", str(path)]) == 0
    assert "UNSIGNED (not authenticated)" in capsys.readouterr().out
    # An unsigned log given a key: refused, naming why.
    _, public = make_key(tmp_path)
    assert cli_main(["audit", "verify", "--key", str(public), str(path)]) == 1
    assert "refused: not signed" in capsys.readouterr().out


def test_a_log_signed_from_some_start_on_vouches_for_what_came_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.log"
    _write(path, 2)  # before audit_key_file was set
    key, public = make_key(tmp_path)
    _write(path, 2, load_signing_key(str(key)))
    assert cli_main(["audit", "verify", "--key", str(public), str(path)]) == 0
    out = capsys.readouterr().out
    assert "note: the first 3 records are unsigned" in out and "anchored at genesis" in out


def test_checkpoints_every_n_records_every_interval_and_at_close(tmp_path: Path) -> None:
    key, public = make_key(tmp_path)
    signer = load_signing_key(str(key))
    path, checkpoint = tmp_path / "audit.log", tmp_path / "audit.checkpoint"
    log = AuditLog(
        str(path), signer=signer, checkpoint_file=str(checkpoint),
        checkpoint_records=3, checkpoint_interval_ms=200,
    )  # fmt: skip
    keys = [load_public_key(str(public))]
    assert [c.seq for c in read_checkpoints(str(checkpoint), keys)] == [0]  # at start
    for n in range(3):
        log.record({"type": "outcome", "call_id": f"c{n}"})

    def checkpointed(seq: int) -> bool:
        return read_checkpoints(str(checkpoint), keys)[0].seq == seq

    eventually(lambda: checkpointed(3), "a checkpoint after 3 records", 5, 0.02)
    log.record({"type": "outcome", "call_id": "c3"})
    eventually(lambda: checkpointed(4), "a checkpoint after the interval", 5, 0.02)
    assert log.checkpoint_seq == 4 == log.head_seq
    log.record({"type": "outcome", "call_id": "c4"})
    log.close()
    (last,) = read_checkpoints(str(checkpoint), keys)
    assert (
        last.seq == 5 and verify_files([str(path)], keys=keys, checkpoints=[last]).broken_at is None
    )
    # A checkpoint another key signed is refused as forged.
    _, other = make_key(tmp_path, "other.key")
    with pytest.raises(ValueError, match="forged checkpoint"):
        read_checkpoints(str(checkpoint), [load_public_key(str(other))])


def test_a_log_cut_while_the_router_was_down_says_so_at_its_next_start(tmp_path: Path) -> None:
    key, public = make_key(tmp_path)
    signer = load_signing_key(str(key))
    path, checkpoint = tmp_path / "audit.log", tmp_path / "audit.checkpoint"
    _write(path, 4, signer, checkpoint_file=str(checkpoint))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))  # the last two records removed
    _write(path, 1, signer, checkpoint_file=str(checkpoint))
    result = verify_files([str(path)], keys=[load_public_key(str(public))])
    assert result.broken_at is not None
    assert "tail truncated before this restart" in result.broken_at[2]


def test_one_writer_per_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    first = AuditLog(str(path))
    with pytest.raises(
        AuditLogBusy, match=rf"{path} is in use by another router \(pid {os.getpid()};"
    ):
        AuditLog(str(path))
    first.close()
    AuditLog(str(path)).close()  # released at close


def test_the_key_file_must_be_a_private_ed25519_key_not_world_readable(tmp_path: Path) -> None:
    key, public = make_key(tmp_path)
    public.chmod(0o600)
    with pytest.raises(ConfigError, match="audit_key_file: not an unencrypted PEM private key"):
        load_signing_key(str(public))
    key.chmod(0o644)
    with pytest.raises(ConfigError, match="audit_key_file: readable or writable by every user"):
        load_signing_key(str(key))
    with pytest.raises(ConfigError, match="audit_key_file: cannot read"):
        load_signing_key(str(tmp_path / "missing"))
