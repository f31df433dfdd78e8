"""The benchmark harness runs end to end in smoke mode (no timing is asserted, ever)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.interpret import interpretation

REPO = Path(__file__).resolve().parents[2]
BENCHES = {"spawn", "throughput", "concurrency", "codex_spawn", "codex_throughput",
           "project", "execute", "execute_concurrent",
           "execute_bytes", "slow_consumer", "idle_pty", "first_byte", "idle_sessions",
           "project_under_load"}  # fmt: skip


@pytest.mark.slow
def test_smoke_run_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--no-install", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(out.read_text())
    assert run["mode"] == "smoke"
    assert run["machine"]["nproc"] >= 1 and run["machine"]["cpu"]
    assert run["command"].startswith("python -m bench")
    rows = {r["name"]: r for r in run["results"]}
    assert set(rows) == BENCHES
    for name, row in rows.items():
        assert row["verdict"] in {"met", "missed", "skipped"}, (name, row["note"])
        if row["verdict"] == "skipped":
            continue
        assert row["contenders"], name
        for stats in row["contenders"].values():
            assert stats["n"] >= 1 and stats["p50"] == stats["p50"]  # not NaN
    # The exec-server rows always carry their raw anchor next to shellgate.
    for name in ("spawn", "throughput", "concurrency"):
        assert {"shellgate", "raw"} <= set(rows[name]["contenders"])
    # The grpc-aio floor (bench/floor_server.py) runs next to shellgate in these rows.
    floor_metric = {"spawn": "shellgate_vs_floor_p50", "concurrency": "shellgate_vs_floor_p50",
                    "execute": "shellgate_vs_floor_p50", "first_byte": "router_minus_floor_ms_p50",
                    "execute_concurrent": "shellgate_vs_floor_p50",
                    "throughput": "shellgate_vs_floor_rate_p50",
                    "execute_bytes": "shellgate_vs_floor_rate_p50"}  # fmt: skip
    for name, metric in floor_metric.items():
        floor = rows[name]["contenders"]["grpc_floor"]
        assert floor["n"] >= 1 and floor["p50"] == floor["p50"], name
        value = rows[name]["metrics"][metric]
        assert value == value, (name, metric)  # not NaN: both sides ran
    # The summary bullets mention the floor wherever it ran (and only there).
    bullets = [
        line for line in interpretation(run["results"]).splitlines() if line.startswith("- ")
    ]
    for row, bullet in zip(run["results"], bullets, strict=True):
        assert ("grpc-aio floor" in bullet) == (
            row["name"] in floor_metric and row["verdict"] != "skipped"
        ), bullet
    # The smoke run never touches the committed results.
    latest = REPO / "bench/results/latest.json"
    if latest.exists():
        assert json.loads(latest.read_text())["mode"] != "smoke"


def test_only_rejects_an_unknown_bench() -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--only", "nope"],
                          cwd=REPO, capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "unknown bench" in done.stderr


@pytest.mark.slow
def test_compare_runs_two_commits_side_by_side(tmp_path: Path) -> None:
    """`--compare REF`: REF's servers run from its exported tree (here the last commit that
    has no ExecuteOnce, so only this checkout offers it), this checkout's from here."""
    ref = subprocess.run(
        ["git", "log", "-1", "--format=%h", "-S", "rpc ExecuteOnce", "--", "protos/shellgate/v1/router.proto"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--compare", f"{ref}~1", "--smoke", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(out.read_text())
    (row,) = run["results"]
    names = set(row["contenders"])
    sides = {name.split("@", 1)[1] for name in names}
    assert len(sides) == 2 and "new" in sides
    (old,) = sides - {"new"}
    for bench in ("execute", "remote", "project", "spawn"):
        assert {f"{bench}@new", f"{bench}@{old}"} <= names
        assert row["metrics"][f"{bench}_new_vs_ref_p50"] > 0
    # The fast path exists only in this checkout: the old tree's servers really ran.
    assert "execute_once@new" in names and f"execute_once@{old}" not in names
