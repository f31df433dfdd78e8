"""Display metadata: `parse_command(argv)` → Read / ListFiles / Search / Unknown (spec 03 §D)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from shellgate.router.bash.shlex_rs import shlex_join, shlex_split
from shellgate.router.bash.word_lowering import lower_script
from shellgate.router.display.formatting import CONNECTORS, is_small_formatting_command
from shellgate.router.display.summary import summarize_main_tokens
from shellgate.router.display.types import ListFiles, ParsedCommand, Read, Search, Unknown
from shellgate.router.policy_projection import extract_bash_command, extract_powershell_command

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


# Kinds of Unknown entries that `simplify_once` may remove (spec 03 §D.1).
_ECHO, _CD, _TRUE, _NL, _OTHER = range(5)


def _simplify_kind(parsed: ParsedCommand) -> int:
    if not isinstance(parsed, Unknown):
        return _OTHER
    if parsed.cmd == "true":
        return _TRUE
    tokens = shlex_split(parsed.cmd) or []
    if not tokens:
        return _OTHER
    if tokens[0] == "echo":
        return _ECHO
    if tokens[0] == "cd":
        return _CD
    if tokens[0] == "nl" and all(token.startswith("-") for token in tokens[1:]):
        return _NL
    return _OTHER


class _FirstAlive:
    """The first still-alive index of one kind; amortised O(1) over a whole simplification."""

    def __init__(self, indices: list[int], alive: list[bool]) -> None:
        self._indices = indices
        self._alive = alive
        self._pos = 0

    def first(self) -> int | None:
        while self._pos < len(self._indices) and not self._alive[self._indices[self._pos]]:
            self._pos += 1
        return self._indices[self._pos] if self._pos < len(self._indices) else None


def _simplify(commands: list[ParsedCommand]) -> list[ParsedCommand]:
    """Apply `simplify_once` until nothing changes.

    Each rule removes one entry and never changes how the others are classified, so the
    rounds are replayed with per-kind cursors instead of rescanning the list: linear time
    even for a script with hundreds of thousands of commands.
    """
    kinds = [_simplify_kind(parsed) for parsed in commands]
    alive = [True] * len(commands)
    firsts = {
        kind: _FirstAlive([i for i, k in enumerate(kinds) if k == kind], alive)
        for kind in (_CD, _TRUE, _NL)
    }
    head, last, remaining = 0, len(commands) - 1, len(commands)
    while remaining > 1:
        while not alive[head]:
            head += 1
        while not alive[last]:
            last -= 1
        victim: int | None = None
        if kinds[head] == _ECHO:  # (a) a leading `echo`
            victim = head
        else:
            cd = firsts[_CD].first()  # (b) the first `cd` when something follows it
            if cd is not None and cd != last:
                victim = cd
            else:  # (c) the first `true`, then (d) the first flags-only `nl`
                victim = firsts[_TRUE].first()
                if victim is None:
                    victim = firsts[_NL].first()
        if victim is None:
            break
        alive[victim] = False
        remaining -= 1
    return [parsed for parsed, keep in zip(commands, alive, strict=True) if keep]


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
    if len(commands) != 1 or isinstance(commands[0], Unknown):
        # An Unknown summary is shown as it is whatever the tokens hold: skip the split.
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
