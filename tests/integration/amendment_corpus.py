"""Issue 14 item 7: the amendment questions put to Codex 0.169 and to shellgate.

Each case is an `exec_command` call under on-request + workspace-write that asks for
`require_escalated` (so both always ask) with the model's `prefix_rule` hint. Codex offers
the hint as the permanent allow rule unless it is one of its banned prefixes; then it
offers the whole command. A hint `P` on the command `P + ["x"]` therefore answers "is P
banned?". The candidates cover every entry of shellgate's list, the issue's twelve, and
the neighbouring interpreter/shell/launcher spellings one would guess at.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import NeedsApproval, SandboxProfile, Skip, parse_policy
from shellgate.router.projection import ShellCall

from tests.integration.runtime_support import call_item, make_turn
from tests.paths import REPO_ROOT

TABLE = REPO_ROOT / "tests" / "unit" / "amendment_oracle" / "codex_0_169.jsonl"

# The twelve: offered by shellgate before, each checked against Codex.
TWELVE = ("bash -c", "zsh -c", "/bin/sh", "/bin/sh -c", "/bin/bash -c", "dash -c", "ksh -c",
          "nodejs", "fish -c", "deno eval", "bun -e", "Rscript")  # fmt: skip

_SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "fish")
_FAMILIES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("python3", "python", "py", "pythonw", "pyw", "pypy", "pypy3"), ("", "-", "-c", "-3", "-m")),
    ((*_SHELLS, "csh", "tcsh", *(f"/bin/{s}" for s in _SHELLS),
      *(f"/usr/bin/{s}" for s in _SHELLS)), ("", "-c", "-lc", "-l")),
    (("pwsh", "pwsh.exe", "powershell", "powershell.exe"),
     ("", "-Command", "-c", "-EncodedCommand", "-ec", "-e", "-File", "-f")),
    (("cmd", "cmd.exe"), ("", "/c", "/k", "/C")),
    (("node", "nodejs", "deno", "bun"), ("", "-e", "--eval", "-p", "eval", "run")),
    (("perl", "ruby", "php", "lua", "julia", "Rscript", "R", "osascript", "tclsh"),
     ("", "-e", "-r", "-E")),
    (("git", "env", "sudo", "npx", "xargs", "nohup", "timeout", "awk"), ("",)),
    # Further guesses: more shell flags and launchers, other interpreters and REPLs.
    (("bash", "sh", "zsh", "/bin/sh"), ("-i", "-ic", "-lic", "-ec", "-xc", "-euc", "-s")),
    (("python3", "python"), ("-u", "-I", "-E", "-B", "-i")),
    (("uv", "uvx", "bunx", "pnpm", "ipython", "irb", "jshell", "tsx", "ts-node", "busybox",
      "su", "doas", "wsl", "wscript", "cscript", "mshta", "swift", "groovy", "scala"), ("",)),
    (("uv run", "pnpm dlx", "busybox sh", "su -c", "sudo -s", "env -i", "wsl -e",
      "deno run -A", "Rscript --vanilla", "pwsh -NoProfile", "pwsh -NoProfile -Command",
      "powershell -NoProfile", "git -c", "git -C", "node --input-type=module"), ("",)),
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One question: run `words` with the hint `prefix_rule` (None: no hint)."""

    words: tuple[str, ...]
    prefix_rule: tuple[str, ...] | None

    def args(self) -> dict[str, Any]:
        """The exec_command arguments of this case (identical for Codex and shellgate)."""
        args: dict[str, Any] = {"cmd": shlex.join(self.words),
                                "sandbox_permissions": "require_escalated",
                                "justification": "amendment oracle"}  # fmt: skip
        if self.prefix_rule is not None:
            args["prefix_rule"] = list(self.prefix_rule)
        return args


def _hinted(prefix: str) -> Case:
    words = tuple(prefix.split(" "))
    return Case((*words, "x"), words)


# Ordinary commands, with no hint (Codex offers the command) and with a narrow one.
ORDINARY = (
    Case(("touch", "x"), None),
    Case(("touch", "x"), ("touch",)),
    Case(("git", "push"), None),
    Case(("git", "push"), ("git", "push")),
    Case(("python3", "script.py"), None),
    Case(("python3", "script.py"), ("python3", "script.py")),
    Case(("python3", "-c", "x"), None),
    Case(("python3", "-c", "x"), ("python3", "-c", "x")),
    Case(("node", "-e", "x"), None),
    Case(("perl", "-e", "x"), None),
    Case(("pwsh", "-Command", "x"), None),
    Case(("cmd.exe", "/c", "x"), None),
    Case(("bash", "-c", "touch /outside"), None),
    Case(("bash", "-lc", "touch x"), ("bash", "-lc", "touch x")),
)


def candidates() -> tuple[str, ...]:
    """Every hinted prefix asked about, as space-joined words, in a stable order."""
    out = dict.fromkeys(TWELVE)
    for heads, flags in _FAMILIES:
        for head in heads:
            for flag in flags:
                out[f"{head} {flag}".strip()] = None
    return tuple(out)


def corpus() -> tuple[Case, ...]:
    """All cases: the hinted candidates, then the ordinary commands."""
    return tuple(_hinted(p) for p in candidates()) + ORDINARY


@dataclass(frozen=True)
class Answer:
    """What was offered: whether the call asks, and the proposed amendment."""

    asked: bool
    amendment: tuple[str, ...] | None


def shellgate_answer(case: Case) -> Answer:
    """shellgate's projection of the case's exec_command call (same policy and sandbox)."""
    turn = make_turn(str(REPO_ROOT), approval="on-request", profile=SandboxProfile.WORKSPACE_WRITE)
    projected = project(call_item("exec_command", case.args()), turn,
                        HostContext(policy=parse_policy("")))  # fmt: skip
    outcome = projected.outcome
    assert isinstance(outcome, ShellCall), outcome
    requirement = outcome.elements[0].approval.requirement
    if isinstance(requirement, NeedsApproval | Skip):
        return Answer(isinstance(requirement, NeedsApproval),
                      requirement.proposed_execpolicy_amendment)  # fmt: skip
    return Answer(False, None)


def row(case: Case, answer: Answer) -> dict[str, Any]:
    """One recorded table row (JSON-ready)."""
    return {"cmd": list(case.words),
            "prefix_rule": None if case.prefix_rule is None else list(case.prefix_rule),
            "asked": answer.asked,
            "amendment": None if answer.amendment is None else list(answer.amendment)}  # fmt: skip


def load_table(path: Path = TABLE) -> list[tuple[Case, Answer]]:
    """The recorded Codex 0.169 answers."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        hint = None if r["prefix_rule"] is None else tuple(r["prefix_rule"])
        amendment = None if r["amendment"] is None else tuple(r["amendment"])
        out.append((Case(tuple(r["cmd"]), hint), Answer(r["asked"], amendment)))
    return out
