"""Era B heredoc single-command prefix (spec 03 §B.4)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from shellgate.router.bash.literal_words import glued_children
from shellgate.router.bash.parse import Node, node_text
from shellgate.router.bash.script_cache import RESULT_CACHE_SIZE, preorder_without_error
from shellgate.router.bash.segments import ScriptCommand, span_of

# Children that attach input to the one command without changing its argv.
_SKIPPED = frozenset(
    {
        "comment",
        "heredoc_body",
        "simple_heredoc_body",
        "heredoc_redirect",
        "herestring_redirect",
        "redirected_statement",
    }
)


def _plain_word(node: Node) -> str | None:
    # Era B's own rule: a word or number without named children, kept verbatim (the
    # literal-word hardening of §B.3 deliberately does not apply here).
    if node.type not in ("word", "number") or node.named_child_count != 0:
        return None
    return node_text(node)


def _scan(named: Sequence[Node]) -> tuple[bool, bool, Node | None]:
    """(has heredoc_redirect, has file_redirect, the single command or None)."""
    has_heredoc = False
    has_file_redirect = False
    single: Node | None = None
    command_count = 0
    for node in named:
        kind = node.type
        if kind == "heredoc_redirect":
            has_heredoc = True
        elif kind == "file_redirect":
            has_file_redirect = True
        elif kind == "command":
            command_count += 1
            single = node
    return has_heredoc, has_file_redirect, single if command_count == 1 else None


def _command_words(data: bytes, command: Node) -> tuple[str, ...] | None:
    # shellgate hardening: words the shell glues across a backslash-newline are not
    # the words the tree shows, so no prefix is taken from them.
    if glued_children(data, command):
        return None
    words: list[str] = []
    for child in command.named_children:
        kind = child.type
        if kind in _SKIPPED:
            continue
        if kind == "command_name":
            first = child.named_child(0)
            value = _plain_word(first) if first is not None else None
        else:
            value = _plain_word(child)
        if value is None:
            return None
        words.append(value)
    return tuple(words) if words else None


@functools.lru_cache(maxsize=RESULT_CACHE_SIZE)
def heredoc_prefix(script: str) -> ScriptCommand | None:
    """The literal words of the one command of a heredoc script, else None."""
    walk = preorder_without_error(script)
    if walk is None:
        return None
    has_heredoc, has_file_redirect, single = _scan(walk.named)
    if not has_heredoc or has_file_redirect or single is None:
        return None
    words = _command_words(script.encode("utf-8", "surrogatepass"), single)
    if words is None:
        return None
    return ScriptCommand(words, span_of(single))
