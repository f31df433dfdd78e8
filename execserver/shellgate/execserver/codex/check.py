"""`shellgate-execserver codex-check`: does this Codex set-up run a turn on its environment?

In order, each step printing one line when it works: the `codex` binary (the pinned
version), the `environments.toml` entry (Codex's own rules), the environment reached and
authenticated (`check_probe`: the causes Codex would not name), then one real
`codex exec` turn against a scripted model on 127.0.0.1 whose one command must run on the
environment and print its marker (`check_turn`). The first step that fails is named in one
line on stderr (exit 1); the whole check is bounded by `--timeout`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from shellgate.execserver.codex import check_environments, check_probe, check_turn
from shellgate.execserver.codex.check_common import CheckFailed, Deadline, UsageError

PREFIX = "shellgate-execserver codex-check"
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CheckOptions:
    """What to check, as the command line gives it."""

    codex: str = "codex"
    environments: str | None = None
    environment: str | None = None
    sandbox: str = "read-only"
    timeout_s: float = DEFAULT_TIMEOUT_S


def run_check(options: CheckOptions, out: TextIO, err: TextIO) -> int:
    """Run the check, report on `out` (what worked) and `err` (the problem); the exit code."""
    if not options.timeout_s > 0:
        print(f"{PREFIX}: --timeout must be a positive number of seconds", file=err)
        return 2
    deadline = Deadline(options.timeout_s)

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        _steps(options, deadline, say)
    except UsageError as exc:
        print(f"{PREFIX}: {exc}", file=err)
        return 2
    except CheckFailed as exc:
        print(f"{PREFIX}: {exc}", file=err)
        return 1
    return 0


def _steps(options: CheckOptions, deadline: Deadline, say: Callable[[str], None]) -> None:
    codex = check_turn.find_codex(options.codex)
    say(f"codex: {check_turn.codex_version(codex, deadline)} ({codex})")
    path = (Path(options.environments).expanduser() if options.environments
            else check_environments.default_path(os.environ))  # fmt: skip
    envs = check_environments.load(path)
    chosen = check_environments.select(envs, options.environment)
    say(f'environment: "{chosen.id}" ({chosen.describe()}) from {path}')
    for note in check_environments.notes(envs, chosen):
        say(f"note: {note}")
    for line in check_probe.probe(chosen, deadline):
        say(line)
    _bounded(deadline, "before the turn")
    say(check_turn.run_turn(codex, chosen, options.sandbox, deadline))
    say(f'ok: Codex runs its commands on environment "{chosen.id}"')


def _bounded(deadline: Deadline, where: str) -> None:
    if deadline.expired():
        raise CheckFailed(f"the check's {deadline.seconds:g} s (--timeout) ran out {where}")
