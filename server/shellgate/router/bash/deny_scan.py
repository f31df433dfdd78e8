"""Deny-side normalised scan of a script: what every command may run, escapes removed.

Codex matches forbidden rules against the words of a script as written, so `\\rm -rf`,
`R=rm; $R -rf` or `echo 'rm -rf x' | bash` walk around a rule forbidding `rm -rf`. This scan
(shellgate's deliberate difference, docs/rules.md) reads each command word as the shell would
run it where that is knowable without running anything: backslash escapes and quotes are
removed, a variable assigned a literal earlier in the script is substituted, and a script fed
to a shell on standard input (heredoc, herestring, `… | sh`) is returned for the caller to scan
in turn. It serves only the deny side: a word it cannot know is dropped, never guessed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from shellgate.router.bash.parse import Node, node_text, walk
from shellgate.router.bash.script_cache import RESULT_CACHE_SIZE, parsed

# Shells that run a script given with `-c`, or read one from standard input without it.
SCRIPT_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "ash", "fish"})

# Scripts larger than this are not walked (the walk is Python-level work per node): the caller
# treats them as opaque, so only the linear literal-name check applies to them.
MAX_DENY_SCAN_BYTES = 64 * 1024

# Commands found per scan: each costs one rule lookup, so a huge script stays linear.
MAX_SCAN_COMMANDS = 20_000

# Words of a script for the literal-name check: anything between shell punctuation.
_TOKEN = re.compile(r"[^\s;|&()<>'\"`$]+")

_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_WORD_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ARG_KINDS = frozenset(
    {"word", "number", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
     "ansi_c_string"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DenyScan:
    """The normalised commands of a script and the scripts it feeds to a shell on stdin."""

    # The part of the script bash runs: up to the complete command holding a syntax error
    # (bash parses a whole command before running it, so that one and the rest never run).
    runnable: str
    commands: tuple[tuple[str, ...], ...]
    stdin_scripts: tuple[str, ...]
    # Per command: its byte span when every word is known and its output feeds nothing
    # (not inside `$(…)`, `<(…)` or a pipeline), else None. The caller blanks the spans of
    # such commands that run nothing else before looking for literal names.
    plain_spans: tuple[tuple[int, int] | None, ...]


def script_tokens(script: str) -> frozenset[str]:
    """Every literal-looking word of a script, escapes removed and `a=b` also split."""
    out: set[str] = set()
    for token in _TOKEN.findall(script.replace("\\", "")):
        out.add(token)
        if "=" in token:
            out.update(part for part in token.split("=") if part)
    return frozenset(out)


def _unescape_word(text: str) -> str | None:
    if "$" in text or "`" in text:
        return None
    # An unquoted backslash-newline vanishes; any other backslash quotes the next character.
    return _WORD_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


class _Values:
    """Word values with the script's literal variable assignments substituted."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}

    def variable(self, node: Node) -> str | None:
        names = [c for c in node.named_children if c.type == "variable_name"]
        if len(names) != 1 or len(node.named_children) != 1:
            return None
        return self.env.get(node_text(names[0]))

    def string(self, node: Node) -> str | None:
        raw = node.text or b""
        start = node.start_byte
        pieces: list[str] = []
        cursor = start + 1
        for child in node.named_children:
            pieces.append(raw[cursor - start : child.start_byte - start].decode("utf-8", "replace"))
            if child.type == "string_content":
                pieces.append(node_text(child))
            elif child.type in ("simple_expansion", "expansion"):
                value = self.variable(child)
                if value is None:
                    return None
                pieces.append(value.replace("\\", "\\\\"))
            else:
                return None
            cursor = child.end_byte
        pieces.append(raw[cursor - start : len(raw) - 1].decode("utf-8", "replace"))
        return _DQ_ESCAPE.sub(r"\1", "".join(pieces))

    def value(self, node: Node) -> str | None:
        kind = node.type
        if kind == "command_name":
            first = node.named_child(0)
            return None if first is None else self.value(first)
        if kind in ("word", "number"):
            return _unescape_word(node_text(node))
        if kind == "raw_string":
            return node_text(node)[1:-1]
        if kind == "ansi_c_string":
            return node_text(node)[2:-1]
        if kind == "string":
            return self.string(node)
        if kind in ("simple_expansion", "expansion"):
            return self.variable(node)
        if kind == "concatenation":
            parts = [self.value(part) for part in node.named_children]
            return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
        return None

    def assign(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            return
        known = self.value(value) if value is not None else ""
        if known is None:
            self.env.pop(node_text(name), None)
        else:
            self.env[node_text(name)] = known


_FEEDING = frozenset({"command_substitution", "process_substitution", "pipeline"})


def _words(values: _Values, command: Node) -> tuple[tuple[str, ...] | None, bool]:
    """(the known words of a command, whether every word is known)."""
    words: list[str] = []
    complete = True
    for child in command.named_children:
        if child.type == "command_name":
            name = values.value(child)
            if name is None:
                return None, False
            words.append(name)
        elif words and child.type in _ARG_KINDS:
            value = values.value(child)
            if value is None:
                complete = False
            else:
                words.append(value)
        elif child.type not in ("file_redirect", "variable_assignment"):
            complete = False
    return (tuple(words) or None), complete


def _feeds_something(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in _FEEDING:
            return True
        parent = parent.parent
    return False


def _reads_stdin_script(words: tuple[str, ...]) -> bool:
    """A shell started without a script operand or `-c`: it runs what stdin holds."""
    if words[0].rsplit("/", 1)[-1] not in SCRIPT_SHELLS:
        return False
    return all(w.startswith("-") and "c" not in w.lstrip("-") for w in words[1:]) or (
        "-s" in words[1:]
    )


def _stdin_texts(values: _Values, command: Node) -> list[str]:
    """Heredoc bodies and herestrings redirected into `command`."""
    texts: list[str] = []
    holder = command.parent
    if holder is not None and holder.type == "redirected_statement":
        for redirect in holder.named_children:
            if redirect.type == "heredoc_redirect":
                texts += [node_text(c) for c in redirect.named_children if c.type == "heredoc_body"]
            elif redirect.type == "herestring_redirect":
                texts += [v for c in redirect.named_children if (v := values.value(c)) is not None]
    for redirect in command.named_children:
        if redirect.type == "herestring_redirect":
            texts += [v for c in redirect.named_children if (v := values.value(c)) is not None]
    return texts


def _piped_texts(commands: dict[int, tuple[str, ...]], command: Node) -> list[str]:
    """The literal arguments of the stages piped into `command` (`echo 'rm x' | sh`)."""
    pipeline = command.parent
    if pipeline is None or pipeline.type != "pipeline":
        return []
    texts: list[str] = []
    for stage in pipeline.named_children:
        if stage.id == command.id:
            break
        words = commands.get(stage.id)
        if words is not None:
            texts.append(" ".join(words[1:]))
    return texts


@functools.lru_cache(maxsize=RESULT_CACHE_SIZE)
def deny_scan(script: str) -> DenyScan | None:
    """The normalised commands of a script (parse errors tolerated); None when too large."""
    if len(script) > MAX_DENY_SCAN_BYTES:
        return None
    tree = parsed(script)
    if tree is None:
        return None
    if tree.root_node.has_error:
        runnable = _before_error(script, tree.root_node)
        tree = parsed(runnable)
        if tree is None or tree.root_node.has_error:
            return DenyScan("", (), (), ())
        script = runnable
    values = _Values()
    found: dict[int, tuple[str, ...]] = {}
    stdin_scripts: list[str] = []
    spans: list[tuple[int, int] | None] = []
    for node in walk(tree.root_node):
        if node.type == "variable_assignment":
            values.assign(node)
            continue
        if node.type != "command":
            continue
        words, complete = _words(values, node)
        if words is None:
            continue
        found[node.id] = words
        plain = complete and not _feeds_something(node)
        spans.append((node.start_byte, node.end_byte) if plain else None)
        if _reads_stdin_script(words):
            stdin_scripts += _stdin_texts(values, node) + _piped_texts(found, node)
        if len(found) >= MAX_SCAN_COMMANDS:
            break
    return DenyScan(script, tuple(found.values()), tuple(stdin_scripts), tuple(spans))


def _cut_before_line_of(script: str, byte: int) -> str:
    data = script.encode("utf-8", "surrogatepass")[:byte]
    cut = data.rfind(b"\n")
    return data[: cut + 1].decode("utf-8", "surrogatepass") if cut != -1 else ""


def _before_error(script: str, root: Node) -> str:
    """The script before the line of its first syntax error, when that part parses cleanly.

    Otherwise the script before the top-level command holding the error (tree-sitter may
    lump several lines into one ERROR node; one re-parse at most keeps this linear).
    """
    first = next((n for n in walk(root) if n.type == "ERROR" or n.is_missing), None)
    if first is not None:
        # An ERROR node may wrap good commands: the error is its first token that is not one.
        bad = next((c for c in first.children if not c.is_named or c.has_error), first)
        candidate = _cut_before_line_of(script, bad.start_byte)
        tree = parsed(candidate)
        if tree is not None and not tree.root_node.has_error:
            return candidate
    for child in root.children:
        if child.has_error or child.is_missing or child.type == "ERROR":
            return _cut_before_line_of(script, child.start_byte)
    return script


def blank_spans(script: str, spans: list[tuple[int, int]]) -> str:
    """The script with the given byte spans replaced by spaces."""
    data = bytearray(script.encode("utf-8", "surrogatepass"))
    for start, end in spans:
        data[start:end] = b" " * (end - start)
    return data.decode("utf-8", "replace")
