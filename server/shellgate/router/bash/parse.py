"""Shared tree-sitter-bash parsing: one parser per thread, bounded input, no recursion."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import tree_sitter
import tree_sitter_bash

# Scripts larger than this are not parsed at all; callers treat that like an unparsable
# script (fallback), which keeps the work on adversarial input bounded.
MAX_SCRIPT_BYTES = 4 * 1024 * 1024

_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
_local = threading.local()

Node = tree_sitter.Node
Tree = tree_sitter.Tree


def _parser() -> tree_sitter.Parser:
    # tree_sitter.Parser is not thread-safe; grpcio runs handlers on a thread pool.
    parser: tree_sitter.Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = tree_sitter.Parser(_LANGUAGE)
        _local.parser = parser
    return parser


def parse_bash(script: str) -> Tree | None:
    """Parse a bash script; None when it is too large to parse within the bound."""
    data = script.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SCRIPT_BYTES:
        return None
    return _parser().parse(data)


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal without Python recursion (deeply nested input is allowed)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def node_text(node: Node) -> str:
    """The UTF-8 source text of a node."""
    raw = node.text
    return raw.decode("utf-8", "surrogatepass") if raw is not None else ""
