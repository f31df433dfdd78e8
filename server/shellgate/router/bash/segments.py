"""A command found in a shell script: its words and the byte span of its `command` node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from shellgate.router.bash.parse import Node


class ByteSpan(NamedTuple):
    """UTF-8 byte range `[start, end)` within the script."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ScriptCommand:
    """The words of one command in a script and where its `command` node lies."""

    words: tuple[str, ...]
    span: ByteSpan


def span_of(node: Node) -> ByteSpan:
    """The byte span of a node."""
    return ByteSpan(node.start_byte, node.end_byte)


def word_lists(commands: tuple[ScriptCommand, ...]) -> list[list[str]]:
    """Plain word lists of script commands (the JSON-friendly form)."""
    return [list(command.words) for command in commands]
