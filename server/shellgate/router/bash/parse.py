"""Shared tree-sitter-bash parsing: one parser per thread, bounded input, no recursion."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import tree_sitter
import tree_sitter_bash

# Bounds on one parse (docs/limits.md). Codex parses any script whole (codex-rs
# shell-command bash.rs `try_parse_shell` has no limit); shellgate refuses to parse past
# these and callers treat the script exactly like an unparsable one (Codex's fallback), so
# the work and memory one request can cause stay bounded. tree-sitter's parse holds the GIL,
# so these also bound how long one parse can keep the event loop's thread from running.
#
# Script bytes: parsing costs ~0.5-2 µs per byte with the GIL held (~1 s here at most).
MAX_SCRIPT_BYTES = 512 * 1024
# Nodes in the tree (`descendant_count`, read in O(1)): every command and every word is at
# least one node, so this caps commands per script and words per command as well; a tree
# larger than this is dropped before any Python walk touches it.
MAX_SCRIPT_NODES = 200_000
# tree-sitter-bash's error recovery re-scans the rest of the script once per NUL byte, so a
# script's cost grows with (NUL bytes x script bytes): 100 000 NULs took 57 s. Past this
# product the script is not parsed (a NUL can never reach execve inside one argument anyway).
MAX_NUL_WORK = 4 * 1024 * 1024
# Pipe characters (`|`, counted without `||`): a long pipeline followed by a syntax error
# is quadratic in its stages in tree-sitter-bash's error recovery, time and memory alike
# (4 000 stages and a trailing `|`: 0.6 s; 20 000: 15 s and 3.3 GiB). 2 048 keeps the worst
# case near 0.15 s and 80 MiB; a script with more (pipes inside quoted regexes count too)
# is judged whole, as an unparsable one.
MAX_PIPES = 2048

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


def within_parse_bounds(data: bytes) -> bool:
    """Whether a script's bytes may be parsed at all (size and NUL bounds)."""
    if len(data) > MAX_SCRIPT_BYTES:
        return False
    if data.count(b"|") - 2 * data.count(b"||") > MAX_PIPES:
        return False
    return data.count(0) * len(data) <= MAX_NUL_WORK


def parse_bash(script: str) -> Tree | None:
    """Parse a bash script; None when it is past the parse bounds (treated as unparsable)."""
    data = script.encode("utf-8", "surrogatepass")
    if not within_parse_bounds(data):
        return None
    tree = _parser().parse(data)
    if tree.root_node.descendant_count > MAX_SCRIPT_NODES:
        return None
    return tree


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
