"""Argument helpers for display metadata and the small-formatting filter (spec 03 §D.2)."""

from __future__ import annotations

from collections.abc import Sequence

CONNECTORS = frozenset({"&&", "||", "|", ";"})

LS_VALUE_FLAGS = (
    "-I",
    "-w",
    "--block-size",
    "--format",
    "--time-style",
    "--color",
    "--quoting-style",
)
EZA_VALUE_FLAGS = ("-I", "--ignore-glob", "--color", "--sort", "--time-style", "--time")
TREE_VALUE_FLAGS = ("-L", "-P", "-I", "--charset", "--filelimit", "--sort")
DU_VALUE_FLAGS = ("-d", "--max-depth", "-B", "--block-size", "--exclude", "--time-style")
RG_VALUE_FLAGS = (
    "-g", "--glob", "--iglob", "-t", "--type", "--type-add", "--type-not", "-m",
    "--max-count", "-A", "-B", "-C", "--context", "--max-depth",
)  # fmt: skip
GIT_LS_FILES_VALUE_FLAGS = ("--exclude", "--exclude-from", "--pathspec-from-file")
FD_VALUE_FLAGS = ("-t", "--type", "-e", "--extension", "-E", "--exclude", "--search-path")
AG_VALUE_FLAGS = (
    "-G", "-g", "--file-search-regex", "--ignore-dir", "--ignore-file", "--path-to-ignore",
)  # fmt: skip
BAT_VALUE_FLAGS = (
    "--theme", "--language", "--style", "--terminal-width", "--tabs", "--line-range",
    "--map-syntax",
)  # fmt: skip
LESS_VALUE_FLAGS = (
    "-p", "-P", "-x", "-y", "-z", "-j", "--pattern", "--prompt", "--tabs", "--shift",
    "--jump-target",
)  # fmt: skip
_AWK_VALUE_FLAGS = ("-F", "-v", "-f", "--field-separator", "--assign", "--file")
NL_VALUE_FLAGS = ("-s", "-w", "-v", "-i", "-b")
_SED_VALUE_FLAGS = ("-e", "-f", "--expression", "--file")
GREP_VALUE_FLAGS = frozenset(
    {"-m", "--max-count", "-C", "--context", "-A", "--after-context", "-B", "--before-context"}
)
_XARGS_VALUE_FLAGS = frozenset({"-E", "-e", "-I", "-L", "-n", "-P", "-s"})
_ALWAYS_FORMATTING = frozenset(
    {"wc", "tr", "cut", "sort", "uniq", "tee", "column", "yes", "printf"}
)
_HIDDEN_PATH_PARTS = frozenset({"build", "dist", "node_modules", "src"})


def all_digits(text: str) -> bool:
    """True when every character is an ASCII digit (also for the empty string)."""
    # Rust's `chars().all(is_ascii_digit)`: true for the empty string.
    return all("0" <= ch <= "9" for ch in text)


def trim_at_connector(tokens: Sequence[str]) -> list[str]:
    """The tokens before the first connector."""
    for index, token in enumerate(tokens):
        if token in CONNECTORS:
            return list(tokens[:index])
    return list(tokens)


def short_display_path(path: str) -> str:
    """The last useful path segment (`webview/src` → `webview`, `./dist` → `.`)."""
    trimmed = path.replace("\\", "/").rstrip("/")
    for part in reversed(trimmed.split("/")):
        if part and part not in _HIDDEN_PATH_PARTS:
            return part
    return trimmed


def skip_flag_values(args: Sequence[str], value_flags: Sequence[str]) -> list[str]:
    """Arguments minus the values of `value_flags` and `--flag=value` tokens."""
    out: list[str] = []
    skip_next = False
    for index, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg == "--":
            out.extend(args[index + 1 :])
            break
        if arg.startswith("--") and "=" in arg:
            continue
        if arg in value_flags:
            skip_next = index + 1 < len(args)
            continue
        out.append(arg)
    return out


def _non_flags(args: Sequence[str], value_flags: Sequence[str]) -> list[str]:
    return [arg for arg in skip_flag_values(args, value_flags) if not arg.startswith("-")]


def positional_operands(args: Sequence[str], value_flags: Sequence[str]) -> list[str]:
    """Operands: flags and their values skipped, everything after `--` kept."""
    out: list[str] = []
    after_dashes = False
    skip_next = False
    for index, arg in enumerate(args):
        if skip_next:
            skip_next = False
        elif after_dashes:
            out.append(arg)
        elif arg == "--":
            after_dashes = True
        elif arg.startswith("--") and "=" in arg:
            continue
        elif arg in value_flags:
            skip_next = index + 1 < len(args)
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def _valid_sed_range(arg: str | None) -> bool:
    """True for a `N[,M]p` sed script."""
    if arg is None or not arg.endswith("p"):
        return False
    parts = arg[:-1].split(",")
    return len(parts) in (1, 2) and all(part and all_digits(part) for part in parts)


def sed_read_path(args: Sequence[str]) -> str | None:
    """The file a `sed -n N,Mp FILE` reads, else None."""
    trimmed = trim_at_connector(args)
    if "-n" not in trimmed:
        return None
    has_range = False
    index = 0
    while index < len(trimmed):
        arg = trimmed[index]
        if arg in ("-e", "--expression"):
            nxt = trimmed[index + 1] if index + 1 < len(trimmed) else None
            has_range = has_range or _valid_sed_range(nxt)
            index += 2
        elif arg in ("-f", "--file"):
            index += 2
        else:
            index += 1
    if not has_range:
        has_range = any(not a.startswith("-") and _valid_sed_range(a) for a in trimmed)
    if not has_range:
        return None
    candidates = _non_flags(trimmed, _SED_VALUE_FLAGS)
    if not candidates:
        return None
    if _valid_sed_range(candidates[0]):
        return candidates[1] if len(candidates) > 1 else None
    return candidates[0]


def awk_data_file(args: Sequence[str]) -> str | None:
    """The data file an awk invocation reads, else None."""
    if not args:
        return None
    trimmed = trim_at_connector(args)
    has_script_file = any(arg in ("-f", "--file") for arg in trimmed)
    non_flags = _non_flags(trimmed, _AWK_VALUE_FLAGS)
    if has_script_file:
        return non_flags[0] if non_flags else None
    return non_flags[1] if len(non_flags) >= 2 else None


def _xargs_subcommand(tokens: Sequence[str]) -> list[str] | None:
    index = 1
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            rest = list(tokens[index + 1 :])
            return rest or None
        if not token.startswith("-"):
            return list(tokens[index:])
        index += 2 if token in _XARGS_VALUE_FLAGS else 1
    return None


def _is_mutating_xargs(tokens: Sequence[str]) -> bool:
    sub = _xargs_subcommand(tokens)
    if not sub:
        return False
    head, tail = sub[0], sub[1:]
    in_place = any(token.startswith(("-i", "-pi")) for token in tail)
    if head in ("perl", "ruby"):
        return in_place
    if head == "sed":
        return in_place or "--in-place" in tail
    if head == "rg":
        return "--replace" in tail
    return False


def _head_tail_formatting(tokens: Sequence[str], allow_plus: bool) -> bool:
    def count_ok(count: str) -> bool:
        if allow_plus and count.startswith("+"):
            return all_digits(count[1:])
        return all_digits(count)

    if len(tokens) == 1:
        return True
    if len(tokens) == 2:
        return tokens[1].startswith("-")
    if len(tokens) == 3:
        return tokens[1] in ("-n", "-c") and count_ok(tokens[2])
    return False


def is_small_formatting_command(tokens: Sequence[str]) -> bool:
    """True for a pipeline helper (`wc`, `head -n 5`, …) that display drops."""
    if not tokens:
        return False
    head = tokens[0]
    if head in _ALWAYS_FORMATTING:
        return True
    if head == "xargs":
        return not _is_mutating_xargs(tokens)
    if head == "awk":
        return awk_data_file(tokens[1:]) is None
    if head in ("head", "tail"):
        return _head_tail_formatting(tokens, allow_plus=head == "tail")
    if head == "sed":
        return sed_read_path(tokens[1:]) is None
    return False
