"""Differential test: `shellgate policy check` agrees with `codex execpolicy check` (0.169.0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from shellgate.router.cli.policy import check_output
from shellgate.router.policy import RulesLoadError

from tests.integration.policy_corpus import BROKEN, RULES, SAME_MESSAGE, cases
from tests.paths import REPO_ROOT

CODEX = REPO_ROOT / ".tools" / "node_modules" / ".bin" / "codex"

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(
        not CODEX.exists(),
        reason=f"codex CLI not installed at {CODEX} (cd .tools && npm install @openai/codex@0.169.0)",
    ),
]

# `codex execpolicy check` takes one command per launch; run the launches concurrently.
WORKERS = 4
CODEX_TIMEOUT_S = 60


def _codex(
    rules: list[Path], command: list[str], resolve: bool
) -> subprocess.CompletedProcess[str]:
    argv = [str(CODEX), "execpolicy", "check"]
    for path in rules:
        argv += ["--rules", str(path)]
    if resolve:
        argv.append("--resolve-host-executables")
    env = {**os.environ, "RUST_BACKTRACE": "0", "NO_COLOR": "1"}
    return subprocess.run(
        [*argv, "--", *command],
        capture_output=True,
        text=True,
        timeout=CODEX_TIMEOUT_S,
        env=env,
        check=False,
    )


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rules")
    for name, text in {**RULES, **BROKEN}.items():
        (folder / f"{name}.rules").write_text(text, encoding="utf-8")
    return folder


def _home() -> str:
    return os.path.expanduser("~")


# ~500 runs of the real codex binary: ~60 s alone, far more on a busy 2-core machine.
@pytest.mark.timeout(600)
def test_check_agrees_with_codex_on_corpus(rules_dir: Path) -> None:
    corpus = cases()
    assert len(corpus) >= 200

    def one(case: tuple[str, list[str], bool]) -> tuple[int, str, str]:
        proc = _codex([rules_dir / f"{case[0]}.rules"], case[1], case[2])
        return proc.returncode, proc.stdout.strip(), proc.stderr

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(one, corpus))
    mismatches = []
    for (name, command, resolve), (code, out, err) in zip(corpus, results, strict=True):
        assert code == 0, f"codex failed on {name} {command}: {err[-500:]}"
        path = rules_dir / f"{name}.rules"
        ours = check_output(
            [(str(path), path.read_text(encoding="utf-8"))],
            command,
            resolve=resolve,
            pretty=False,
            home=_home(),
        )
        if json.loads(ours) != json.loads(out) or ours != out:
            mismatches.append((name, command, resolve, out, ours))
    assert not mismatches, "\n".join(map(repr, mismatches[:20]))


def test_multiple_rules_files_and_pretty_agree(rules_dir: Path) -> None:
    paths = [rules_dir / "mixed.rules", rules_dir / "hosts.rules", rules_dir / "nohosts.rules"]
    for command in (["git", "status"], ["/usr/bin/git", "status"], ["rm", "-i", "x"]):
        proc = _codex(paths, command, True)
        assert proc.returncode == 0, proc.stderr
        ours = check_output(
            [(str(p), p.read_text(encoding="utf-8")) for p in paths],
            command,
            resolve=True,
            pretty=False,
            home=_home(),
        )
        assert ours == proc.stdout.strip()
    argv = [
        str(CODEX),
        "execpolicy",
        "check",
        "--rules",
        str(paths[0]),
        "--pretty",
        "--",
        "ls",
        "-l",
    ]
    pretty = subprocess.run(
        argv, capture_output=True, text=True, timeout=CODEX_TIMEOUT_S, check=True
    )
    ours_cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "shellgate.router.cli.main",
            "policy",
            "check",
            "--rules",
            str(paths[0]),
            "--pretty",
            "--",
            "ls",
            "-l",
        ],
        capture_output=True,
        text=True,
        timeout=CODEX_TIMEOUT_S,
        check=True,
    )
    assert ours_cli.stdout == pretty.stdout


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_files_fail_in_both(rules_dir: Path, name: str) -> None:
    path = rules_dir / f"{name}.rules"
    proc = _codex([path], ["ls"], False)
    assert proc.returncode != 0
    with pytest.raises(RulesLoadError) as info:
        check_output(
            [(str(path), path.read_text(encoding="utf-8"))],
            ["ls"],
            resolve=False,
            pretty=False,
            home=_home(),
        )
    if name in SAME_MESSAGE:
        ours = info.value.message
        assert ours in proc.stderr, f"{ours!r} not in codex stderr:\n{proc.stderr}"
