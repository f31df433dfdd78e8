"""The literal-command scan of a wrapper script, deny side only (spec 03 §B.6)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from shellgate.router.bash.literal_words import glued_children, literal_word
from shellgate.router.bash.parse import Node
from shellgate.router.bash.script_cache import RESULT_CACHE_SIZE, preorder_without_error
from shellgate.router.bash.segments import ScriptCommand, span_of


def _candidates(named: Sequence[Node]) -> list[Node]:
    """Every `command` node, in source order (a command before those nested in it)."""
    # `named` is in left-to-right pre-order, so the stable sort keeps an enclosing command
    # ahead of a nested one that starts at the same byte.
    found = [node for node in named if node.type == "command"]
    found.sort(key=lambda node: node.start_byte)
    return found


def _literal_command(data: bytes, command: Node) -> tuple[str, ...] | None:
    """The literal words of one candidate, None when its name is not literal."""
    words: list[str] = []
    seen_name = False
    # Words glued to a neighbour by a backslash-newline are not literal as shown.
    glued = glued_children(data, command)
    for index, child in enumerate(command.named_children):
        if child.type == "command_name":
            first = child.named_child(0)
            name = literal_word(first) if first is not None and index not in glued else None
            if name is None:
                return None
            words.append(name)
            seen_name = True
            continue
        if not seen_name:
            # Assignments and redirects before the name do not change which command runs.
            continue
        value = literal_word(child) if index not in glued else None
        if value is not None:
            # Anything that is not certainly literal is dropped and the walk goes on.
            words.append(value)
    return tuple(words) if seen_name else None


@functools.lru_cache(maxsize=RESULT_CACHE_SIZE)
def scan_script(script: str) -> tuple[ScriptCommand, ...] | None:
    """The literal words of every command of a script that parses, else None."""
    walk = preorder_without_error(script)
    if walk is None:
        return None
    data = script.encode("utf-8", "surrogatepass")
    commands: list[ScriptCommand] = []
    for node in _candidates(walk.named):
        words = _literal_command(data, node)
        if words is not None:
            commands.append(ScriptCommand(words, span_of(node)))
    return tuple(commands)
