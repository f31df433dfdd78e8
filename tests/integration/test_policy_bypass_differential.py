"""Issue 14 bypasses: shellgate's answer next to Codex 0.169's rules answer, for docs/rules.md.

Codex matches its rules against the segments it lowers a script to (the parity projection,
`commands_for_exec_policy`); `codex execpolicy check` gives its decision for each segment.
shellgate must deny or ask for every case; Codex's answer is recorded, not required, since
seeing through these scripts is shellgate's deliberate difference.
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from shellgate.router.policy import (
    ApprovalMode,
    ApprovalPolicy,
    Forbidden,
    NeedsApproval,
    SandboxProfile,
    UnmatchedContext,
    create_exec_approval_requirement_for_argv,
    parse_policy,
)
from shellgate.router.policy_projection import commands_for_exec_policy

from tests.integration.bypass_corpus import BYPASS_RULES, BYPASS_SCRIPTS
from tests.integration.test_policy_differential import CODEX, CODEX_TIMEOUT_S, WORKERS

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(not CODEX.exists(), reason=f"codex CLI not installed at {CODEX}"),
]

CTX = UnmatchedContext(ApprovalPolicy(ApprovalMode.ON_REQUEST), SandboxProfile.WORKSPACE_WRITE)
ORDER = {"allow": 0, "prompt": 1, "forbidden": 2}


def _codex_decision(rules: Path, segment: tuple[str, ...]) -> str:
    proc = subprocess.run(
        [str(CODEX), "execpolicy", "check", "--resolve-host-executables", "--rules", str(rules),
         "--", *segment],
        capture_output=True, text=True, timeout=CODEX_TIMEOUT_S, check=True,
        env={**os.environ, "RUST_BACKTRACE": "0", "NO_COLOR": "1"},
    )  # fmt: skip
    import json

    return str(json.loads(proc.stdout).get("decision", "none"))


def _row(script: str, codex: str, ours: object) -> str:
    shown = script.replace("\n", "⏎").replace("|", "\\|")
    kind = type(ours).__name__
    return f"| `{shown}` | {codex} | {kind} |"


@pytest.mark.timeout(600)
def test_bypasses_recorded_against_codex(tmp_path: Path) -> None:
    rules = tmp_path / "bypass.rules"
    rules.write_text(BYPASS_RULES, encoding="utf-8")
    policy = parse_policy(BYPASS_RULES)
    segments = {s: commands_for_exec_policy(["bash", "-lc", s]).commands for s in BYPASS_SCRIPTS}
    jobs = sorted({seg for segs in segments.values() for seg in segs})
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        decided = dict(zip(jobs, pool.map(lambda seg: _codex_decision(rules, seg), jobs),
                           strict=True))  # fmt: skip
    rows = []
    codex_denies = 0
    for script in BYPASS_SCRIPTS:
        answers = [decided[seg] for seg in segments[script] if decided[seg] != "none"]
        codex = max(answers, key=ORDER.__getitem__) if answers else "no rule matches"
        codex_denies += codex in ("forbidden", "prompt")
        ours = create_exec_approval_requirement_for_argv(
            policy, ["bash", "-lc", script], CTX
        ).requirement
        assert isinstance(ours, Forbidden | NeedsApproval), (script, ours)
        rows.append(_row(script, codex, ours))
    # The recorded answers are real: plain forms are forbidden by Codex too, most others not.
    assert _codex_decision(rules, ("git", "push")) == "forbidden"
    assert 0 < codex_denies < len(BYPASS_SCRIPTS) // 2
    table = "\n".join(["| script (`bash -lc`) | Codex 0.169 rules | shellgate |",
                       "|---|---|---|", *rows]) + "\n"  # fmt: skip
    out = os.environ.get("SHELLGATE_BYPASS_TABLE")
    if out:
        Path(out).write_text(table, encoding="utf-8")
