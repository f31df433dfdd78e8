"""Deny-side command unwrapping (spec 04 §3.3): prefixes and nested shells, depth 4."""

from __future__ import annotations

from collections.abc import Sequence

from shellgate.router.policy.paths import command_basename
from shellgate.router.policy_projection import (
    extract_bash_command,
    parse_shell_lc_literal_commands,
)

# Every unwrap (prefix stripped or nested script scanned) counts one level. Fixed by the spec:
# each level re-parses or copies, so the bound keeps adversarial input O(depth) work.
MAX_UNWRAP_DEPTH = 4

Command = tuple[str, ...]

# prefix program -> options that take the next token as their value.
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset(
        [
            "-C",
            "-D",
            "-g",
            "-h",
            "-p",
            "-R",
            "-r",
            "-T",
            "-t",
            "-U",
            "-u",
            "--chdir",
            "--chroot",
            "--close-from",
            "--command-timeout",
            "--group",
            "--host",
            "--other-user",
            "--prompt",
            "--role",
            "--type",
            "--user",
        ]
    ),
    "doas": frozenset({"-C", "-u"}),
    "env": frozenset(["-C", "-S", "-u", "--chdir", "--split-string", "--unset"]),
    "time": frozenset(["-f", "-o", "--format", "--output"]),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "timeout": frozenset(["-k", "-s", "--kill-after", "--signal"]),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "stdbuf": frozenset(["-e", "-i", "-o", "--error", "--input", "--output"]),
    "xargs": frozenset(
        [
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-chars",
            "--max-procs",
            "--process-slot-var",
        ]
    ),
}
PREFIX_PROGRAMS = frozenset(_VALUE_OPTIONS)


def strip_prefix(c: Sequence[str]) -> Command | None:
    """What a prefix command runs (`sudo -u root rm x` → `rm x`), or None."""
    program = command_basename(c[0])
    value_options = _VALUE_OPTIONS[program]
    i = 1
    while i < len(c):
        token = c[i]
        if token == "--":
            i += 1
            break
        if not token.startswith("-"):
            break
        if token in value_options:
            i += 2
            continue
        # `command -v` / `-V` only describes the name; it runs nothing.
        if program == "command" and not token.startswith("--") and ("v" in token or "V" in token):
            return None
        i += 1
    if program in ("sudo", "env"):
        while i < len(c) and "=" in c[i][1:]:
            i += 1
    if program == "timeout":
        i += 1  # the DURATION operand
    rest = tuple(c[i:])
    return rest or None


def unwrap_once(c: Sequence[str]) -> list[Command]:
    """What `c` runs directly: a nested wrapper's scanned commands, or a prefix's command."""
    if not c:
        return []
    if extract_bash_command(c) is not None:
        scanned = parse_shell_lc_literal_commands(c)
        return [tuple(cmd) for cmd in scanned or []]
    if command_basename(c[0]) in PREFIX_PROGRAMS:
        stripped = strip_prefix(c)
        return [] if stripped is None else [stripped]
    return []


def unwrapped_commands(
    argv: Sequence[str], first_level: Sequence[Sequence[str]] | None = None
) -> list[Command]:
    """Every command reached from `argv` by 1–4 unwraps, in pre-order.

    `first_level`, when given, replaces `unwrap_once(argv)` (a caller that already holds the
    literal-command scan of a wrapper argv passes it to avoid re-parsing the script).
    """
    out: list[Command] = []
    top = [tuple(c) for c in first_level] if first_level is not None else unwrap_once(argv)
    # Explicit stack instead of recursion: (command, depth) in pre-order.
    stack: list[tuple[Command, int]] = [(c, 1) for c in reversed(top)]
    while stack:
        cmd, depth = stack.pop()
        out.append(cmd)
        if depth < MAX_UNWRAP_DEPTH:
            stack.extend((d, depth + 1) for d in reversed(unwrap_once(cmd)))
    return out
