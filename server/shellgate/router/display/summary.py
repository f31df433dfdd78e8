"""One command's display summary: `summarize_main_tokens` (spec 03 §D.3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shellgate.router.bash.shlex_rs import shlex_join
from shellgate.router.display import formatting as fmt
from shellgate.router.display.formatting import (
    awk_data_file,
    positional_operands,
    sed_read_path,
    short_display_path,
    trim_at_connector,
)
from shellgate.router.display.types import ListFiles, ParsedCommand, Read, Search, Unknown

_PYTHON_WALKERS = (
    "os.walk", "os.listdir", "os.scandir", "glob.glob", "glob.iglob", "pathlib.Path", ".rglob(",
)  # fmt: skip


def _first_operand_path(args: Sequence[str], value_flags: Sequence[str]) -> str | None:
    operands = positional_operands(args, value_flags)
    return short_display_path(operands[0]) if operands else None


def _non_flags(args: Sequence[str], value_flags: Sequence[str]) -> list[str]:
    skipped = fmt.skip_flag_values(trim_at_connector(args), value_flags)
    return [arg for arg in skipped if not arg.startswith("-")]


def _read(cmd: str, path: str) -> Read:
    return Read(cmd=cmd, name=short_display_path(path), path=path)


def _grep_like(cmd: str, args: Sequence[str]) -> Search:
    operands: list[str] = []
    pattern: str | None = None
    after_dashes = False
    items = iter(trim_at_connector(args))
    for arg in items:
        if after_dashes:
            operands.append(arg)
        elif arg == "--":
            after_dashes = True
        elif arg in ("-e", "--regexp", "-f", "--file"):
            value = next(items, None)
            if value is not None and pattern is None:
                pattern = value
        elif arg in fmt.GREP_VALUE_FLAGS:
            next(items, None)
        elif not arg.startswith("-"):
            operands.append(arg)
    # The query is never shortened: patterns may legitimately contain slashes.
    query = pattern if pattern is not None else (operands[0] if operands else None)
    path_index = 0 if pattern is not None else 1
    path = short_display_path(operands[path_index]) if len(operands) > path_index else None
    return Search(cmd=cmd, query=query, path=path)


def _is_pathish(text: str) -> bool:
    return text in (".", "..") or text.startswith(("./", "../")) or "/" in text or "\\" in text


def _fd(cmd: str, args: Sequence[str]) -> ParsedCommand:
    operands = _non_flags(args, fmt.FD_VALUE_FLAGS)
    if len(operands) == 1:
        if _is_pathish(operands[0]):
            return ListFiles(cmd=cmd, path=short_display_path(operands[0]))
        return Search(cmd=cmd, query=operands[0], path=None)
    if len(operands) >= 2:
        return Search(cmd=cmd, query=operands[0], path=short_display_path(operands[1]))
    return ListFiles(cmd=cmd, path=None)


def _find(cmd: str, args: Sequence[str]) -> ParsedCommand:
    trimmed = trim_at_connector(args)
    path: str | None = None
    for arg in trimmed:
        if not arg.startswith("-") and arg not in ("!", "(", ")"):
            path = short_display_path(arg)
            break
    query: str | None = None
    for index, arg in enumerate(trimmed):
        if arg in ("-name", "-iname", "-path", "-regex"):
            if index + 1 < len(trimmed):
                query = trimmed[index + 1]
            break
    if query is not None:
        return Search(cmd=cmd, query=query, path=path)
    return ListFiles(cmd=cmd, path=path)


def _rg(cmd: str, args: Sequence[str]) -> ParsedCommand:
    operands = _non_flags(args, fmt.RG_VALUE_FLAGS)
    if "--files" in trim_at_connector(args):
        return ListFiles(cmd=cmd, path=short_display_path(operands[0]) if operands else None)
    return _search_first_second(cmd, operands)


def _search_first_second(cmd: str, operands: Sequence[str]) -> Search:
    query = operands[0] if operands else None
    path = short_display_path(operands[1]) if len(operands) > 1 else None
    return Search(cmd=cmd, query=query, path=path)


def _git(cmd: str, args: Sequence[str]) -> ParsedCommand:
    if args and args[0] == "grep":
        return _grep_like(cmd, args[1:])
    if args and args[0] == "ls-files":
        return ListFiles(cmd=cmd, path=_first_operand_path(args[1:], fmt.GIT_LS_FILES_VALUE_FLAGS))
    return Unknown(cmd=cmd)


def _pager(value_flags: Sequence[str]) -> Callable[[str, Sequence[str]], ParsedCommand]:
    def summarize(cmd: str, args: Sequence[str]) -> ParsedCommand:
        operands = positional_operands(args, value_flags)
        return _read(cmd, operands[0]) if len(operands) == 1 else Unknown(cmd=cmd)

    return summarize


def _count_ok(value: str, allow_plus: bool) -> bool:
    digits = value[1:] if allow_plus and value.startswith("+") else value
    if allow_plus:
        return bool(digits) and fmt.all_digits(digits)
    return fmt.all_digits(digits)


def _head_tail(allow_plus: bool) -> Callable[[str, Sequence[str]], ParsedCommand]:
    def summarize(cmd: str, args: Sequence[str]) -> ParsedCommand:
        # As in Codex: the count must be the first argument, as `-n N` or `-nN`.
        valid_n = False
        if args and args[0] == "-n":
            valid_n = len(args) > 1 and _count_ok(args[1], allow_plus)
        elif args and args[0].startswith("-n"):
            valid_n = _count_ok(args[0][2:], allow_plus)
        if valid_n:
            candidates = list(args)
            if len(args) > 1 and args[0] == "-n" and _count_ok(args[1], allow_plus):
                candidates = list(args[2:])
            for candidate in candidates:
                if not candidate.startswith("-"):
                    return _read(cmd, candidate)
        if len(args) == 1 and not args[0].startswith("-"):
            return _read(cmd, args[0])
        return Unknown(cmd=cmd)

    return summarize


def _awk(cmd: str, args: Sequence[str]) -> ParsedCommand:
    path = awk_data_file(args)
    return _read(cmd, path) if path is not None else Unknown(cmd=cmd)


def _nl(cmd: str, args: Sequence[str]) -> ParsedCommand:
    for candidate in fmt.skip_flag_values(args, fmt.NL_VALUE_FLAGS):
        if not candidate.startswith("-"):
            return _read(cmd, candidate)
    return Unknown(cmd=cmd)


def _sed(cmd: str, args: Sequence[str]) -> ParsedCommand:
    path = sed_read_path(args)
    return _read(cmd, path) if path is not None else Unknown(cmd=cmd)


def _python(cmd: str, args: Sequence[str]) -> ParsedCommand:
    items = iter(trim_at_connector(args))
    for arg in items:
        if arg == "-c":
            script = next(items, None)
            if script is not None:
                if any(marker in script for marker in _PYTHON_WALKERS):
                    return ListFiles(cmd=cmd, path=None)
                return Unknown(cmd=cmd)
    return Unknown(cmd=cmd)


def _list(value_flags: Sequence[str]) -> Callable[[str, Sequence[str]], ParsedCommand]:
    def summarize(cmd: str, args: Sequence[str]) -> ParsedCommand:
        return ListFiles(cmd=cmd, path=_first_operand_path(args, value_flags))

    return summarize


def _ag(cmd: str, args: Sequence[str]) -> ParsedCommand:
    return _search_first_second(cmd, _non_flags(args, fmt.AG_VALUE_FLAGS))


_BY_HEAD: dict[str, Callable[[str, Sequence[str]], ParsedCommand]] = {
    "ls": _list(fmt.LS_VALUE_FLAGS),
    "eza": _list(fmt.EZA_VALUE_FLAGS),
    "exa": _list(fmt.EZA_VALUE_FLAGS),
    "tree": _list(fmt.TREE_VALUE_FLAGS),
    "du": _list(fmt.DU_VALUE_FLAGS),
    "rg": _rg,
    "rga": _rg,
    "ripgrep-all": _rg,
    "git": _git,
    "fd": _fd,
    "find": _find,
    "grep": _grep_like,
    "egrep": _grep_like,
    "fgrep": _grep_like,
    "ag": _ag,
    "ack": _ag,
    "pt": _ag,
    "cat": _pager(()),
    "more": _pager(()),
    "bat": _pager(fmt.BAT_VALUE_FLAGS),
    "batcat": _pager(fmt.BAT_VALUE_FLAGS),
    "less": _pager(fmt.LESS_VALUE_FLAGS),
    "head": _head_tail(allow_plus=False),
    "tail": _head_tail(allow_plus=True),
    "awk": _awk,
    "nl": _nl,
    "sed": _sed,
}


def _is_python(head: str) -> bool:
    return head in ("python", "python2", "python3") or head.startswith(("python2.", "python3."))


def summarize_main_tokens(tokens: Sequence[str]) -> ParsedCommand:
    """What one command appears to do, by its first word."""
    cmd = shlex_join(tokens)
    if not tokens:
        return Unknown(cmd=cmd)
    head, tail = tokens[0], tokens[1:]
    handler = _BY_HEAD.get(head)
    if handler is not None:
        return handler(cmd, tail)
    if _is_python(head):
        return _python(cmd, tail)
    return Unknown(cmd=cmd)
