"""Literal-word checks shared by the word-only lowering and the literal-command scan."""

from __future__ import annotations

from shellgate.router.bash.parse import Node, node_text

# Characters that make an unquoted word expand at run time in bash or zsh (globs, braces,
# tilde, escapes, expansions, zsh's `^`/`#` globbing): such a word is not what it reads.
_EXPANDING_CHARS = frozenset("{}*?[]\\~^#$`")

# Sequences that the shell rewrites inside double quotes; a string holding one is not literal.
_DQ_ESCAPED = frozenset('$`"\\\n')


def is_literal_word_text(text: str) -> bool:
    """True when an unquoted word's text is exactly what the shell passes on."""
    if text.startswith("="):
        # zsh expands a leading `=cmd` to the command's path.
        return False
    return _EXPANDING_CHARS.isdisjoint(text)


def literal_word_or_number(node: Node) -> str | None:
    """The text of a `word`/`number` node that passes the literal-word check, else None."""
    if node.type not in ("word", "number") or node.named_child_count != 0:
        return None
    text = node_text(node)
    return text if is_literal_word_text(text) else None


def has_double_quote_escape(content: str) -> bool:
    """True when double-quoted content holds a `\\` the shell would rewrite."""
    index = 0
    while True:
        index = content.find("\\", index)
        if index == -1 or index + 1 >= len(content):
            return False
        if content[index + 1] in _DQ_ESCAPED:
            return True
        # A backslash before any other character is literal, and so is that character.
        index += 2


def literal_double_quoted(node: Node) -> str | None:
    """The content of a `string` node with no expansion and no rewritten escape, else None."""
    if node.type != "string":
        return None
    if any(child.type != "string_content" for child in node.named_children):
        return None
    raw = node_text(node)
    if len(raw) < 2 or not raw.startswith('"') or not raw.endswith('"'):
        return None
    content = raw[1:-1]
    return None if has_double_quote_escape(content) else content


def literal_raw_string(node: Node) -> str | None:
    """The content of a single-quoted `raw_string` node, else None."""
    if node.type != "raw_string":
        return None
    raw = node_text(node)
    if len(raw) < 2 or not raw.startswith("'") or not raw.endswith("'"):
        return None
    return raw[1:-1]


def literal_part(node: Node) -> str | None:
    """A literal `word`/`number`/`string`/`raw_string` value, else None."""
    kind = node.type
    if kind in ("word", "number"):
        return literal_word_or_number(node)
    if kind == "string":
        return literal_double_quoted(node)
    if kind == "raw_string":
        return literal_raw_string(node)
    return None


def literal_word(node: Node) -> str | None:
    """The value of a literal word node (a part or a concatenation of parts), else None."""
    if node.type != "concatenation":
        return literal_part(node)
    pieces: list[str] = []
    for part in node.named_children:
        # tree-sitter-bash does not nest concatenations, so parts are never concatenations.
        value = literal_part(part)
        if value is None:
            return None
        pieces.append(value)
    joined = "".join(pieces)
    return joined or None


_WORD_KINDS = frozenset({"command_name", "word", "number", "string", "raw_string", "concatenation"})
_CONTINUATION = b"\\\n"


def joined_by_line_continuation(data: bytes, left: Node, right: Node) -> bool:
    """True when the shell glues two word nodes into one word (`-del\\<newline>ete`).

    tree-sitter-bash reads an unquoted backslash-newline as whitespace, but the shell
    removes it before splitting words, so `find . -del\\<newline>ete` runs `-delete`
    while the tree shows `-del` and `ete`.
    """
    if left.type not in _WORD_KINDS or right.type not in _WORD_KINDS:
        return False
    gap = data[left.end_byte : right.start_byte]
    return bool(gap) and gap == _CONTINUATION * (len(gap) // 2) and len(gap) % 2 == 0


def glued_children(data: bytes, command: Node) -> set[int]:
    """Indexes of the named children of `command` that the shell glues to a neighbour."""
    glued: set[int] = set()
    if data.find(_CONTINUATION, command.start_byte, command.end_byte) == -1:
        return glued  # no backslash-newline between the children: nothing can be glued
    children = command.named_children
    for index in range(1, len(children)):
        if joined_by_line_continuation(data, children[index - 1], children[index]):
            glued.update((index - 1, index))
    return glued
