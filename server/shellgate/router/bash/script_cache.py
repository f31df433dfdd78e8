"""One tree-sitter parse per script, reused by the projections that read the same script."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from shellgate.router.bash.parse import Node, Tree, parse_bash

# A handful of recent scripts per thread: B, C, display and the deny-side scan all read the
# same wrapper script within one projection. Trees are per thread because tree-sitter trees
# must not be shared across threads without copying.
_CACHE_SIZE = 4

# The derived results (immutable tuples of frozen records) are memoised process-wide with
# this many entries per function, so one script feeding B, C, display and the deny-side
# scan is walked once per function, not once per caller.
RESULT_CACHE_SIZE = 8
# A walk holds one Python object per node; only walks of ordinary-sized scripts are kept
# (a huge script is walked again by each reader rather than pinned in memory).
_MAX_CACHED_WALK_CHARS = 64 * 1024
_local = threading.local()


def _cache() -> OrderedDict[str, Tree | None]:
    cache: OrderedDict[str, Tree | None] | None = getattr(_local, "cache", None)
    if cache is None:
        cache = OrderedDict()
        _local.cache = cache
    return cache


def parsed(script: str) -> Tree | None:
    """The parse tree of `script` (None when too large to parse), cached per thread."""
    cache = _cache()
    if script in cache:
        cache.move_to_end(script)
        return cache[script]
    tree = parse_bash(script)
    cache[script] = tree
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return tree


def parsed_without_error(script: str) -> Tree | None:
    """The parse tree when it has no ERROR or MISSING node, else None."""
    tree = parsed(script)
    if tree is None or tree.root_node.has_error:
        return None
    return tree


@dataclass(frozen=True, slots=True)
class Preorder:
    """A tree's nodes in left-to-right pre-order, root first."""

    # Every node, anonymous tokens included.
    every: tuple[Node, ...]
    # The nodes reached from the root through named children only (root included).
    named: tuple[Node, ...]


def _preorder(root: Node) -> Preorder:
    # A tree cursor visits each node once without building per-node child lists, which
    # costs less than half of walking `node.children`.
    every: list[Node] = []
    named: list[Node] = []
    cursor = root.walk()
    # Whether each open ancestor was reached through named children only.
    path: list[bool] = []
    while True:
        node = cursor.node
        assert node is not None
        on_named = not path or (path[-1] and node.is_named)
        every.append(node)
        if on_named:
            named.append(node)
        if cursor.goto_first_child():
            path.append(on_named)
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return Preorder(tuple(every), tuple(named))
            path.pop()


def _walks() -> OrderedDict[str, Preorder]:
    walks: OrderedDict[str, Preorder] | None = getattr(_local, "walks", None)
    if walks is None:
        walks = OrderedDict()
        _local.walks = walks
    return walks


def preorder_without_error(script: str) -> Preorder | None:
    """The nodes of `script`'s tree when it has no ERROR or MISSING node, cached per thread.

    B's lowering, the literal scan and the heredoc prefix all walk the same tree.
    """
    tree = parsed_without_error(script)
    if tree is None:
        return None
    if len(script) > _MAX_CACHED_WALK_CHARS:
        return _preorder(tree.root_node)
    walks = _walks()
    walk = walks.get(script)
    if walk is None:
        walk = _preorder(tree.root_node)
        walks[script] = walk
        while len(walks) > _CACHE_SIZE:
            walks.popitem(last=False)
    else:
        walks.move_to_end(script)
    return walk
