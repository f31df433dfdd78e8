"""Era B word-only lowering with the literal-word hardening (spec 03 §B.3)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from shellgate.router.bash.literal_words import (
    glued_children,
    is_literal_word_text,
    literal_double_quoted,
    literal_raw_string,
    literal_word,
)
from shellgate.router.bash.parse import Node, node_text
from shellgate.router.bash.script_cache import RESULT_CACHE_SIZE, preorder_without_error
from shellgate.router.bash.segments import ScriptCommand, span_of

_ALLOWED_NAMED = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "command",
        "command_name",
        "word",
        "string",
        "string_content",
        "raw_string",
        "number",
        "concatenation",
    }
)
_ALLOWED_TOKENS = frozenset({"&&", "||", ";", "|", '"', "'"})


def _token_allowed(kind: str) -> bool:
    # `&`, `|&`, `;;`, `&>`, `(`, `$`, `<<`, `=`, ... all change what runs or where output
    # goes, so only the four plain connectors, quotes and whitespace are accepted.
    return kind in _ALLOWED_TOKENS or not kind.strip()


def _collect_commands(nodes: Sequence[Node]) -> list[Node] | None:
    """Every `command` node when the whole tree is word-only, else None."""
    commands: list[Node] = []
    for node in nodes:
        kind = node.type
        if node.is_named:
            if kind not in _ALLOWED_NAMED:
                return None
            if kind in ("word", "number") and (
                node.named_child_count != 0 or not is_literal_word_text(node_text(node))
            ):
                return None
            if kind == "command":
                commands.append(node)
        elif not _token_allowed(kind):
            return None
    commands.sort(key=lambda command: command.start_byte)
    return commands


def _lower_command(data: bytes, command: Node) -> tuple[str, ...] | None:
    """The words of one word-only `command` node, else None."""
    if glued_children(data, command):
        return None
    words: list[str] = []
    for child in command.named_children:
        kind = child.type
        value: str | None
        if kind == "command_name":
            first = child.named_child(0)
            if first is None or first.type != "word":
                return None
            value = node_text(first)
        elif kind in ("word", "number"):
            # The tree walk already applied the literal-word check, so no escapes remain.
            value = node_text(child)
        elif kind == "string":
            value = literal_double_quoted(child)
        elif kind == "raw_string":
            value = literal_raw_string(child)
        elif kind == "concatenation":
            value = literal_word(child)
        else:
            return None
        if value is None:
            return None
        words.append(value)
    return tuple(words)


@functools.lru_cache(maxsize=RESULT_CACHE_SIZE)
def lower_script(script: str) -> tuple[ScriptCommand, ...] | None:
    """The word-only commands of a script with their spans; `()` for an empty script."""
    walk = preorder_without_error(script)
    if walk is None:
        return None
    nodes = _collect_commands(walk.every)
    if nodes is None:
        return None
    lowered: list[ScriptCommand] = []
    data = script.encode("utf-8", "surrogatepass")
    for node in nodes:
        words = _lower_command(data, node)
        if words is None:
            return None
        lowered.append(ScriptCommand(words, span_of(node)))
    return tuple(lowered)
