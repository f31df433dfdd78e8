"""Display metadata: `parse_command(argv)` → Read / ListFiles / Search / Unknown (spec 03 §D)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from shellgate.router.display_formatting import CONNECTORS, is_small_formatting_command
from shellgate.router.display_summary import summarize_main_tokens
from shellgate.router.display_types import ListFiles, ParsedCommand, Read, Search, Unknown
from shellgate.router.policy_projection import extract_bash_command, extract_powershell_command
from shellgate.router.shlex_rs import shlex_join, shlex_split
from shellgate.router.word_lowering import lower_script

__all__ = [
    "ListFiles",
    "ParsedCommand",
    "Read",
    "Search",
    "Unknown",
    "is_small_formatting_command",
    "parse_command",
    "parse_shell_script",
]


def parse_command(argv: Sequence[str]) -> list[ParsedCommand]:
    """Lossy, human-readable summaries of what a command does; never used for policy."""
    deduped: list[ParsedCommand] = []
    for parsed in _parse_command_impl(argv):
        if not deduped or deduped[-1] != parsed:
            deduped.append(parsed)
    if any(isinstance(parsed, Unknown) for parsed in deduped):
        return [_single_unknown(argv)]
    return deduped


def _single_unknown(argv: Sequence[str]) -> Unknown:
    extracted = extract_bash_command(argv)
    if extracted is not None:
        return Unknown(cmd=extracted[1])
    script = extract_powershell_command(argv)
    if script is not None:
        return Unknown(cmd=script)
    return Unknown(cmd=shlex_join(argv))


def _parse_command_impl(argv: Sequence[str]) -> list[ParsedCommand]:
    extracted = extract_bash_command(argv)
    if extracted is not None:
        return parse_shell_script(extracted[1])
    script = extract_powershell_command(argv)
    if script is not None:
        return [Unknown(cmd=script)]
    tokens = _normalize_tokens(argv)
    parts = _split_on_connectors(tokens) if any(t in CONNECTORS for t in tokens) else [tokens]
    return _simplify(_summarize_with_cd(parts))


def _normalize_tokens(argv: Sequence[str]) -> list[str]:
    """Drop a leading `yes |`/`no |`; re-split a literal `bash|zsh -c|-lc` script."""
    if len(argv) >= 2 and argv[1] == "|" and argv[0] in ("yes", "y", "no", "n"):
        return list(argv[2:])
    if len(argv) == 3 and argv[0] in ("bash", "zsh") and argv[1] in ("-c", "-lc"):
        split = shlex_split(argv[2])
        return split if split is not None else list(argv)
    return list(argv)


def _split_on_connectors(tokens: Sequence[str]) -> list[list[str]]:
    parts: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token in CONNECTORS:
            if current:
                parts.append(current)
                current = []
        else:
            current.append(token)
    if current:
        parts.append(current)
    return parts


def _is_abs_like(path: str) -> bool:
    if path.startswith("/"):
        return True
    if len(path) >= 3 and path[0].isascii() and path[0].isalpha() and path[1:3] == ":\\":
        return True
    return path.startswith("\\\\")


def join_paths(base: str, rel: str) -> str:
    """`rel` if absolute-like, else `base/rel` (Rust `PathBuf::push` on POSIX)."""
    if _is_abs_like(rel) or not base:
        return rel
    return base + rel if base.endswith("/") else f"{base}/{rel}"


def _cd_target(args: Sequence[str]) -> str | None:
    target: str | None = None
    for index, arg in enumerate(args):
        if arg == "--":
            return args[index + 1] if index + 1 < len(args) else None
        if not arg.startswith("-"):
            target = arg
    return target


def _summarize_with_cd(parts: Sequence[Sequence[str]]) -> list[ParsedCommand]:
    """Summaries of each part; `cd` parts only move the directory later reads are under."""
    commands: list[ParsedCommand] = []
    cwd: str | None = None
    for tokens in parts:
        if tokens and tokens[0] == "cd":
            target = _cd_target(tokens[1:])
            if target is not None:
                cwd = target if cwd is None else join_paths(cwd, target)
            continue
        parsed = summarize_main_tokens(tokens)
        if isinstance(parsed, Read) and cwd is not None:
            parsed = Read(cmd=parsed.cmd, name=parsed.name, path=join_paths(cwd, parsed.path))
        commands.append(parsed)
    return commands


def _first_word_is(parsed: ParsedCommand, word: str) -> bool:
    if not isinstance(parsed, Unknown):
        return False
    tokens = shlex_split(parsed.cmd) or []
    return bool(tokens) and tokens[0] == word


def _is_flags_only_nl(parsed: ParsedCommand) -> bool:
    if not isinstance(parsed, Unknown):
        return False
    tokens = shlex_split(parsed.cmd) or []
    return bool(tokens) and tokens[0] == "nl" and all(t.startswith("-") for t in tokens[1:])


def _simplify_once(commands: list[ParsedCommand]) -> list[ParsedCommand] | None:
    if len(commands) <= 1:
        return None
    if _first_word_is(commands[0], "echo"):
        return commands[1:]
    for index, parsed in enumerate(commands):
        if _first_word_is(parsed, "cd"):
            if index + 1 < len(commands):
                return commands[:index] + commands[index + 1 :]
            break
    for predicate in (lambda p: p == Unknown(cmd="true"), _is_flags_only_nl):
        for index, parsed in enumerate(commands):
            if predicate(parsed):
                return commands[:index] + commands[index + 1 :]
    return None


def _simplify(commands: list[ParsedCommand]) -> list[ParsedCommand]:
    # Each step removes one entry, so this ends after at most len(commands) rounds.
    while (simpler := _simplify_once(commands)) is not None:
        commands = simpler
    return commands


def parse_shell_script(script: str) -> list[ParsedCommand]:
    """Display summaries of a bash-compatible script (word-only scripts only)."""
    lowered = lower_script(script)
    if not lowered:
        return [Unknown(cmd=script)]
    all_commands = [list(command.words) for command in lowered]
    kept = [tokens for tokens in all_commands if not is_small_formatting_command(tokens)]
    if not kept:
        return [Unknown(cmd=script)]
    commands = _summarize_with_cd(kept)
    if len(commands) > 1:
        commands = _simplify([c for c in commands if c != Unknown(cmd="true")])
    if len(commands) != 1:
        return commands
    script_tokens = shlex_split(script) or []
    had_connectors = len(all_commands) > 1 or any(t in CONNECTORS for t in script_tokens)
    return [_attribute_single(commands[0], script, script_tokens, had_connectors)]


def _attribute_single(
    parsed: ParsedCommand, script: str, script_tokens: list[str], had_connectors: bool
) -> ParsedCommand:
    """The `cmd` shown for a script that reduced to one command."""
    if isinstance(parsed, Read):
        if not had_connectors:
            return Read(cmd=shlex_join(script_tokens), name=parsed.name, path=parsed.path)
        has_pipe = "|" in script_tokens
        has_sed_n = any(a == "sed" and b == "-n" for a, b in itertools.pairwise(script_tokens))
        if has_pipe and has_sed_n:
            return Read(cmd=script, name=parsed.name, path=parsed.path)
        return parsed
    if had_connectors:
        return parsed
    if isinstance(parsed, ListFiles):
        return ListFiles(cmd=shlex_join(script_tokens), path=parsed.path)
    if isinstance(parsed, Search):
        return Search(cmd=shlex_join(script_tokens), query=parsed.query, path=parsed.path)
    return parsed
