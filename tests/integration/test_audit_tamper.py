"""What the approver sees is what runs, and the audit log proves it: real router processes
write a signed, checkpointed log, and `shellgate audit verify` refuses it — naming why in
one line — after its head is cut, its tail is cut past a checkpoint, its chain is
rewritten and recomputed, or it is deleted and the router restarted; a second router on
the same file does not start."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from shellgate.router.cli.main import main as cli_main
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.audit_keys import make_key
from tests.router_harness import function_item, router_subprocess, turn

RULES = 'prefix_rule(pattern=["rm"], decision="forbidden")\n'
GENESIS = "0" * 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(folder: Path, logs: Path, key: Path, metrics_port: int = 0) -> Path:
    """A router TOML: a rotating signed audit log in `logs`, its checkpoint in `folder`."""
    rules = folder / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "base.rules").write_text(RULES)
    metrics = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""
    config = folder / f"router-{logs.name}.toml"
    config.write_text(
        f'local_cwd = "{folder}"\nrules_dirs = ["{rules}"]\n'
        f'audit_log = "{logs / "audit.log"}"\naudit_key_file = "{key}"\n'
        f'audit_checkpoint_file = "{folder / "audit.checkpoint"}"\n'
        f'audit_fsync = "always"\naudit_max_bytes = 4000\naudit_keep = 2\n{metrics}'
        "[limits]\nshutdown_grace_ms = 500\n"
    )
    return config


def _calls(port: int, prefix: str, count: int) -> None:
    """`count` calls: an allowed echo and a forbidden rm, alternately."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        for n in range(count):
            cmd = f"echo {prefix}{n}" if n % 2 == 0 else f"rm -rf {prefix}{n}"
            request = router_pb2.ExecuteRequest(
                thread_id="t", turn=turn(),
                item=function_item("exec_command", {"cmd": cmd, "login": False}, f"{prefix}{n}"),
            )  # fmt: skip
            events = list(stub.Execute(request, timeout=30))
            assert events[-1].WhichOneof("event") == "completed"


def _head_seq(metrics_port: int, log: Path) -> int:
    """`shellgate_audit_head_seq` once it is the file's last seq and stays so (the writer
    thread may still be writing a call's outcome when the call has answered)."""
    seen, deadline = -2, time.monotonic() + 10
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        (line,) = [x for x in text.splitlines() if x.startswith("shellgate_audit_head_seq ")]
        gauge = int(float(line.split()[1]))
        if gauge == seen == json.loads(log.read_bytes().splitlines()[-1])["seq"]:
            return gauge
        assert time.monotonic() < deadline, (gauge, seen)
        seen = gauge
        time.sleep(0.3)


def _files(logs: Path) -> list[Path]:
    """The audit files, oldest first."""
    rotated = sorted(logs.glob("audit.log.*"), key=lambda p: -int(p.suffix[1:]))
    return [*rotated, logs / "audit.log"]


@dataclass(frozen=True)
class GoodLog:
    """A log two router runs wrote, and what verifies it."""

    folder: Path
    key: Path
    public: Path
    checkpoint: Path
    head_seq: int

    def copy(self, to: Path) -> list[str]:
        """A copy of the log files in `to`/logs, oldest first."""
        logs = to / "logs"
        shutil.copytree(self.folder / "logs", logs, ignore=shutil.ignore_patterns(".*"))
        return [str(f) for f in _files(logs)]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> GoodLog:
    folder = tmp_path_factory.mktemp("audited")
    key, public = make_key(folder)
    metrics = _free_port()
    config = _config(folder, folder / "logs", key, metrics)
    with router_subprocess(["--config", str(config)]) as (_, port):
        _calls(port, "a", 4)
    with router_subprocess(["--config", str(config)]) as (_, port):
        _calls(port, "b", 2)
        head = _head_seq(metrics, folder / "logs" / "audit.log")
    return GoodLog(folder, key, public, folder / "audit.checkpoint", head)


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli_main(["audit", "verify", *args])
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


def _refused(capsys: pytest.CaptureFixture[str], why: str, *args: str) -> str:
    code, out = _verify(capsys, *args)
    assert code == 1, out
    assert len(out.splitlines()) == 1 and ": refused: " in out and why in out, out
    return out


def test_a_good_log_verifies_with_its_key_and_checkpoint(
    good: GoodLog, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(f) for f in _files(good.folder / "logs")]
    assert len(files) == 3  # rotated, and the oldest file dropped by the router itself
    code, out = _verify(
        capsys, "--key", str(good.public), "--checkpoint", str(good.checkpoint), *files
    )
    assert code == 0, out
    assert out.startswith("ok: ") and "signed by key" in out and "reaches 1 checkpoint" in out
    assert "anchored at seq " in out and "anchored at seq 0," not in out
    assert f"-{good.head_seq})" in out  # the checkpoint and the metrics name the same head
    records = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()]
    starts = [r for r in records if r["type"] == "start"]
    # The second run's start names the previous head and the checkpoint it found.
    assert starts[-1]["head"]["seq"] == starts[-1]["seq"] - 1
    before = [r for r in records if r["seq"] < starts[-1]["seq"] and r["type"] != "rotate"]
    found = starts[-1]["checkpoint"]
    assert (found["seq"], found["hash"]) == (before[-1]["seq"], before[-1]["hash"])
    # The signing key verifies too (its public half is used).
    assert _verify(capsys, "--key", str(good.key), *files)[0] == 0


def test_head_truncation_is_refused(
    good: GoodLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = good.copy(tmp_path)
    key = ("--key", str(good.public))
    # The oldest file gone: the chain now begins where no kept file begins.
    _refused(capsys, "head truncated", *key, *files[1:])
    # The first lines of the oldest file gone.
    oldest = Path(files[0])
    oldest.write_bytes(b"".join(oldest.read_bytes().splitlines(keepends=True)[2:]))
    out = _refused(capsys, "head truncated", *key, *files)
    assert out.startswith(f"{oldest}:1: ")


def test_tail_truncation_past_a_checkpoint_is_refused(
    good: GoodLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = good.copy(tmp_path)
    newest = Path(files[-1])
    newest.write_bytes(b"".join(newest.read_bytes().splitlines(keepends=True)[:-1]))
    key = ("--key", str(good.public))
    # The cut log alone still chains: only what was shipped elsewhere can tell.
    assert _verify(capsys, *key, *files)[0] == 0
    out = _refused(capsys, "tail truncated", *key, "--checkpoint", str(good.checkpoint), *files)
    assert f"checkpoint {good.checkpoint}:1 says seq {good.head_seq} existed" in out
    _refused(
        capsys, f"below --min-seq {good.head_seq}", *key, "--min-seq", str(good.head_seq), *files
    )


def _forge(files: list[str], edit: Any, resign: Any = None) -> None:
    """Rewrite records with `edit(record)`, recomputing every hash and `prev` after them
    (and the heads and checkpoints start records name), as whoever can write the files can."""
    prev, digests = None, {}
    for path in files:
        out = []
        for line in Path(path).read_bytes().splitlines():
            record = json.loads(line)
            record.pop("hash"), record.pop("sig", None)
            edit(record)
            if prev is not None:
                record["prev"] = prev
            if record["type"] == "start" and record.get("head"):
                record["head"] = {"seq": record["seq"] - 1, "hash": record["prev"]}
            if record["type"] == "start" and record.get("checkpoint"):
                seq = record["checkpoint"]["seq"]
                record["checkpoint"]["hash"] = digests.get(seq, record["checkpoint"]["hash"])
            body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
            prev = digests[record["seq"]] = hashlib.sha256(body).hexdigest()
            tail = f',"hash":"{prev}"' + (f',"sig":"{resign(prev)}"' if resign else "")
            out.append(body[:-1] + tail.encode() + b"}\n")
        Path(path).write_bytes(b"".join(out))


def _allow_the_rm(record: dict[str, Any]) -> None:
    if record.get("decision") == "forbidden":
        record["decision"] = "allow"


def test_a_recomputed_forged_chain_is_refused(
    good: GoodLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = ("--key", str(good.public))
    # Re-hashed without signatures: a whole chain, which only the missing signatures betray.
    files = good.copy(tmp_path / "stripped")
    _forge(files, _allow_the_rm)
    assert _verify(capsys, "--unsigned", *files)[0] == 0  # the hole the key closes
    _refused(capsys, "not signed", *key, *files)
    # Re-hashed and signed with another key, as the record format says.
    other = Ed25519PrivateKey.generate()
    files = good.copy(tmp_path / "resigned")
    _forge(files, _allow_the_rm, lambda digest: base64.b64encode(
        other.sign(b"shellgate-audit-record-v1\x00" + digest.encode())).decode())  # fmt: skip
    _refused(capsys, "forged: the signature does not verify", *key, *files)
    # One record changed and re-hashed from there on, the old signatures kept: refused at
    # exactly that record (the ones before it keep hashes their signatures cover).
    files = good.copy(tmp_path / "kept")
    lines = [(f, n, x) for f in files for n, x in enumerate(Path(f).read_bytes().splitlines(), 1)]
    where = next(f"{f}:{n}:" for f, n, x in lines if json.loads(x).get("decision") == "forbidden")
    signatures = iter([json.loads(x).get("sig") for _, _, x in lines])
    _forge(files, _allow_the_rm, lambda _digest: next(signatures))
    out = _refused(capsys, "forged: the signature does not verify", *key, *files)
    assert out.startswith(where)


def test_delete_and_restart_is_refused(
    good: GoodLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = tmp_path / "shipped.checkpoint"
    shutil.copy(good.checkpoint, shipped)
    key = ("--key", str(good.public))
    # Everything deleted, the checkpoint file too: a new chain at seq 0, validly signed.
    folder = tmp_path / "all"
    folder.mkdir()
    with router_subprocess(["--config", str(_config(folder, folder / "logs", good.key))]) as (
        _,
        port,
    ):
        _calls(port, "c", 1)
    files = [str(f) for f in _files(folder / "logs")]
    assert _verify(capsys, *key, *files)[0] == 0  # looks like a first start
    out = _refused(capsys, "started over", *key, "--checkpoint", str(shipped), *files)
    assert "deleted, then restarted?" in out
    # The log deleted, its checkpoint file kept: the new start record names what it found.
    folder = tmp_path / "logs-only"
    folder.mkdir()
    shutil.copy(good.checkpoint, folder / "audit.checkpoint")
    with router_subprocess(["--config", str(_config(folder, folder / "logs", good.key))]) as (
        _,
        port,
    ):
        _calls(port, "d", 1)
    files = [str(f) for f in _files(folder / "logs")]
    out = _refused(capsys, "started over: the router found a checkpoint of chain", *key, *files)
    assert out.startswith(f"{files[0]}:1: ")


def test_a_second_router_on_the_same_file_is_refused_in_one_line(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path)
    config = _config(tmp_path, tmp_path / "logs", key)
    serve = [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--config", str(config),
             "--listen", "127.0.0.1:0", "--no-local-token"]  # fmt: skip
    with router_subprocess(["--config", str(config)]) as (first, _):
        second = subprocess.run(serve, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert (
            f"audit log {tmp_path / 'logs' / 'audit.log'} is in use by another router" in lines[0]
        )
        assert f"(pid {first.pid};" in lines[0]
    # The first router's exit released the file.
    with router_subprocess(["--config", str(config)]):
        pass
