"""Dangerous-command heuristic (spec 04 §3.2): later Codex's forced `rm`, seen through unwraps."""

from __future__ import annotations

from collections.abc import Sequence

from shellgate.router.policy.paths import command_basename
from shellgate.router.policy.unwrap import unwrapped_commands


def _is_force_flag(arg: str) -> bool:
    if arg == "--force":
        return True
    # A short-option cluster: one `-`, then characters not starting with `-`, one being `f`.
    return len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and "f" in arg[1:]


def forced_rm(argv: Sequence[str]) -> bool:
    """Later Codex's ForcedRm match: `rm` with a force flag before `--`, also behind `sudo`."""
    # Iterative form of Codex's `sudo` recursion (not an unwrap: no depth bound applies).
    i = 0
    while i < len(argv) and command_basename(argv[i]) == "sudo":
        i += 1
    if i >= len(argv) or command_basename(argv[i]) != "rm":
        return False
    for arg in argv[i + 1 :]:
        if arg == "--":
            return False
        if _is_force_flag(arg):
            return True
    return False


def command_might_be_dangerous(
    argv: Sequence[str], literal_commands: Sequence[Sequence[str]] | None = None
) -> bool:
    """Forced `rm` in the argv or in any command unwrapped from it (depth ≤ 4).

    `literal_commands` may carry the literal-command scan of a wrapper argv already computed.
    """
    if forced_rm(argv):
        return True
    return any(forced_rm(c) for c in unwrapped_commands(argv, literal_commands))
