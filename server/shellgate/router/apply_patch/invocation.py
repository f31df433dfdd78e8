"""Recognising apply_patch invocations: direct argv and shell heredoc forms (spec 02 §6.1-§6.2)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.router.apply_patch.parser import (
    BEGIN_PATCH,
    ParsedPatch,
    PatchParseError,
    parse_patch,
)
from shellgate.router.apply_patch.paths import cwd_path, file_stem, is_windows_path
from shellgate.router.bash.parse import Node, node_text, within_parse_bounds
from shellgate.router.bash.script_cache import parsed

APPLY_PATCH_COMMANDS = frozenset({"apply_patch", "applypatch"})


class ScriptKind(enum.Enum):
    """Which kind of wrapper carried the script (all are read with tree-sitter-bash)."""

    UNIX = "unix"
    POWERSHELL = "powershell"
    CMD = "cmd"


@dataclass(frozen=True)
class PatchInvocation:
    """A recognised invocation: the parsed patch and the `cd` directory, if any."""

    parsed: ParsedPatch
    workdir: str | None


@dataclass(frozen=True)
class InvocationParseError:
    """A recognised invocation whose patch does not parse."""

    error: PatchParseError


@dataclass(frozen=True)
class NotRecognised:
    """Not an apply_patch invocation; `shell_parse_error` when the script could not be read."""

    shell_parse_error: bool = False


Recognition = PatchInvocation | InvocationParseError | NotRecognised


def _classify(shell: str, flag: str, windows: bool) -> ScriptKind | None:
    stem = file_stem(shell, windows).lower()
    if stem in ("bash", "zsh", "sh") and flag in ("-lc", "-c"):
        return ScriptKind.UNIX
    if stem in ("pwsh", "powershell") and flag.lower() == "-command":
        return ScriptKind.POWERSHELL
    if stem == "cmd" and flag.lower() == "/c":
        return ScriptKind.CMD
    return None


def shell_script(argv: Sequence[str], cwd: str) -> tuple[ScriptKind, str] | None:
    """The script of a wrapper apply_patch recognises (its own stem-based rule), else None."""
    # The shell path's convention follows the cwd: `C:\...\pwsh.exe` only with a Windows cwd.
    windows = is_windows_path(cwd_path(cwd))
    if len(argv) == 3:
        kind = _classify(argv[0], argv[1], windows)
        return (kind, argv[2]) if kind is not None else None
    if len(argv) == 4:
        stem = file_stem(argv[0], windows).lower()
        if stem in ("pwsh", "powershell") and argv[1].lower() == "-noprofile":
            kind = _classify(argv[0], argv[2], windows)
            return (kind, argv[3]) if kind is not None else None
    return None


def recognise(argv: Sequence[str], cwd: str) -> Recognition:
    """Rules 2-4 of spec 02 §6.1: the direct form, then the shell heredoc forms."""
    if len(argv) == 2 and argv[0] in APPLY_PATCH_COMMANDS:
        return _parsed(argv[1], None)
    wrapped = shell_script(argv, cwd)
    if wrapped is None:
        return NotRecognised()
    extracted = extract_heredoc(wrapped[1])
    if isinstance(extracted, NotRecognised):
        return extracted
    body, workdir = extracted
    return _parsed(body, workdir)


def is_implicit_invocation(argv: Sequence[str], cwd: str) -> bool:
    """Rule 1: a bare patch as the whole argv, or as a wrapper's whole script."""
    if len(argv) == 1 and _parses(argv[0]):
        return True
    wrapped = shell_script(argv, cwd)
    return wrapped is not None and _parses(wrapped[1])


def _parses(text: str) -> bool:
    # A patch's first line is the begin marker: without it parsing fails, so skip the try.
    if BEGIN_PATCH not in text:
        return False
    try:
        parse_patch(text)
    except PatchParseError:
        return False
    return True


def _parsed(body: str, workdir: str | None) -> PatchInvocation | InvocationParseError:
    try:
        return PatchInvocation(parse_patch(body), workdir)
    except PatchParseError as exc:
        return InvocationParseError(exc)


def extract_heredoc(script: str) -> tuple[str, str | None] | NotRecognised:
    """`(body, cd path)` when the script is exactly one recognised heredoc statement."""
    if "<<" not in script:
        # No heredoc operator, no heredoc statement: spare the parse (an unparsable script
        # is still reported as such, exactly when parse_bash would refuse it).
        unparsable = not within_parse_bounds(script.encode("utf-8", "surrogatepass"))
        return NotRecognised(shell_parse_error=unparsable)
    # The same script is parsed for projection B; share that tree (read-only).
    tree = parsed(script)
    if tree is None:
        return NotRecognised(shell_parse_error=True)
    top = _named(tree.root_node)
    if len(top) != 1 or top[0].type != "redirected_statement":
        return NotRecognised()
    statement = top[0]
    body = statement.child_by_field_name("body")
    parts = _named(statement)
    if body is None or len(parts) != 2 or parts[0] != body:
        return NotRecognised()
    heredoc = _heredoc_body(parts[1])
    if heredoc is None:
        return NotRecognised()
    if body.type == "command":
        workdir = None
        if not _is_bare_apply_command(body):
            return NotRecognised()
    elif body.type == "list":
        found = _cd_then_apply(body)
        if found is None:
            return NotRecognised()
        workdir = found
    else:
        return NotRecognised()
    # Codex drops the newlines that end the body (the one before the terminator included).
    return node_text(heredoc).rstrip("\n"), workdir


def _named(node: Node) -> list[Node]:
    return [child for child in node.children if child.is_named]


def _heredoc_body(redirect: Node) -> Node | None:
    # Exactly `<<DELIM`, body, terminator: no other redirects or trailing arguments.
    if redirect.type != "heredoc_redirect":
        return None
    named = _named(redirect)
    kinds = [child.type for child in named]
    if kinds != ["heredoc_start", "heredoc_body", "heredoc_end"]:
        return None
    # A MISSING terminator (the script ends inside the body) still matches, as in Codex's
    # tree-sitter query: bash reads such a heredoc to the end of the script, so the whole
    # remaining text is the patch.
    return named[1]


def _command_name(command: Node) -> str | None:
    name = command.child_by_field_name("name")
    if name is None or name.type != "command_name":
        return None
    inner = _named(name)
    if len(inner) != 1 or inner[0].type != "word":
        return None
    return node_text(inner[0])


def _is_bare_apply_command(command: Node) -> bool:
    # The command's only child is its name: no arguments, no assignments.
    return len(_named(command)) == 1 and _command_name(command) in APPLY_PATCH_COMMANDS


def _cd_then_apply(node: Node) -> str | None:
    children = node.children
    if len(children) != 3 or children[1].type != "&&":
        return None
    cd, apply = children[0], children[2]
    if cd.type != "command" or apply.type != "command":
        return None
    if not _is_bare_apply_command(apply) or _command_name(cd) != "cd":
        return None
    cd_parts = _named(cd)
    if len(cd_parts) != 2:
        return None
    return _cd_argument(cd_parts[1])


def _cd_argument(arg: Node) -> str | None:
    if arg.type == "word":
        text = node_text(arg)
        # A flag is not a directory (`cd -P x` has two arguments anyway; `cd -` moves back).
        return None if text.startswith("-") else text
    if arg.type == "string":
        inner = _named(arg)
        if len(inner) == 1 and inner[0].type == "string_content":
            return node_text(inner[0])
        return None
    if arg.type == "raw_string":
        text = node_text(arg)
        return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == "'" else text
    return None
