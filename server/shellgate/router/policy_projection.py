"""Projection B: the exec-policy view of a handler argv (spec 03 §B)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.router.bash.heredoc_prefix import heredoc_prefix
from shellgate.router.bash.literal_scan import scan_script
from shellgate.router.bash.segments import ByteSpan, ScriptCommand, word_lists
from shellgate.router.bash.word_lowering import lower_script
from shellgate.router.handler.shells import POSIX_SHELLS, ShellType, detect_shell_type

__all__ = [
    "ByteSpan",
    "CommandOrigin",
    "PolicyProjection",
    "ScriptCommand",
    "commands_for_exec_policy",
    "extract_bash_command",
    "extract_powershell_command",
    "literal_commands_for_argv",
    "lowered_commands_for_argv",
    "parse_plain_shell_script",
    "parse_shell_lc_literal_commands",
    "parse_shell_lc_plain_commands",
    "parse_shell_lc_single_command_prefix",
]

_POWERSHELL_FLAGS = frozenset({"-nologo", "-noprofile", "-command", "-c"})


class CommandOrigin(enum.StrEnum):
    """Which heuristics judge the segments (spec 03 §B.5)."""

    GENERIC = "Generic"
    POWERSHELL = "PowerShell"


@dataclass(frozen=True, slots=True)
class PolicyProjection:
    """The segments that exec policy evaluates, with how they were obtained."""

    commands: tuple[tuple[str, ...], ...]
    used_complex_parsing: bool
    command_origin: CommandOrigin
    # Byte span of each segment's `command` node in the script; None for a fallback segment
    # (the wrapper argv itself), which has no place in any script.
    spans: tuple[ByteSpan | None, ...]


def extract_bash_command(argv: Sequence[str]) -> tuple[str, str] | None:
    """`(shell, script)` for an exact `[bash|zsh|sh, -c|-lc, script]`, else None."""
    if len(argv) != 3:
        return None
    shell, flag, script = argv
    if flag not in ("-lc", "-c"):
        return None
    if detect_shell_type(shell) not in POSIX_SHELLS:
        return None
    return shell, script


def extract_powershell_command(argv: Sequence[str]) -> str | None:
    """The script of a PowerShell wrapper (`-NoLogo`/`-NoProfile` then `-Command`/`-c`)."""
    if len(argv) < 3 or detect_shell_type(argv[0]) is not ShellType.POWERSHELL:
        return None
    index = 1
    while index + 1 < len(argv):
        flag = argv[index].lower()
        if flag not in _POWERSHELL_FLAGS:
            return None
        if flag in ("-command", "-c"):
            return argv[index + 1]
        index += 1
    return None


def parse_plain_shell_script(script: str) -> list[list[str]] | None:
    """Word-only lowering of a script (§B.3); `[]` for an empty script, None if rejected."""
    lowered = lower_script(script)
    return None if lowered is None else word_lists(lowered)


def lowered_commands_for_argv(argv: Sequence[str]) -> tuple[ScriptCommand, ...] | None:
    """The lowered commands (with spans) of a bash/zsh/sh wrapper's script, else None."""
    extracted = extract_bash_command(argv)
    if extracted is None:
        return None
    return lower_script(extracted[1])


def parse_shell_lc_plain_commands(argv: Sequence[str]) -> list[list[str]] | None:
    """§B.1 then §B.3: the word-only commands of a wrapper's script."""
    lowered = lowered_commands_for_argv(argv)
    return None if lowered is None else word_lists(lowered)


def _heredoc_prefix_for_argv(argv: Sequence[str]) -> ScriptCommand | None:
    extracted = extract_bash_command(argv)
    if extracted is None:
        return None
    return heredoc_prefix(extracted[1])


def parse_shell_lc_single_command_prefix(argv: Sequence[str]) -> list[str] | None:
    """The heredoc single-command prefix of a wrapper's script (§B.4), else None."""
    prefix = _heredoc_prefix_for_argv(argv)
    return None if prefix is None else list(prefix.words)


def literal_commands_for_argv(argv: Sequence[str]) -> tuple[ScriptCommand, ...] | None:
    """The literal-command scan (§B.6) with spans; deny side only."""
    extracted = extract_bash_command(argv)
    if extracted is None:
        return None
    return scan_script(extracted[1])


def parse_shell_lc_literal_commands(argv: Sequence[str]) -> list[list[str]] | None:
    """The literal words of every command in a wrapper's script (§B.6); deny side only."""
    scanned = literal_commands_for_argv(argv)
    return None if scanned is None else word_lists(scanned)


def commands_for_exec_policy(argv: Sequence[str]) -> PolicyProjection:
    """The policy segments of a handler argv, first match wins (§B.5)."""
    lowered = lowered_commands_for_argv(argv)
    if lowered:
        return PolicyProjection(
            commands=tuple(command.words for command in lowered),
            used_complex_parsing=False,
            command_origin=CommandOrigin.GENERIC,
            spans=tuple(command.span for command in lowered),
        )
    # Step 2 (PowerShell AST lowering) exists only on Windows hosts; shellgate hosts are
    # POSIX, where PowerShell scripts are never lowered.
    prefix = _heredoc_prefix_for_argv(argv)
    if prefix is not None:
        return PolicyProjection(
            commands=(prefix.words,),
            used_complex_parsing=True,
            command_origin=CommandOrigin.GENERIC,
            spans=(prefix.span,),
        )
    return PolicyProjection(
        commands=(tuple(argv),),
        used_complex_parsing=False,
        command_origin=CommandOrigin.GENERIC,
        spans=(None,),
    )
