"""One tree-sitter parse per script, reused by the projections that read the same script."""

from __future__ import annotations

import threading
from collections import OrderedDict

from shellgate.router.bash_parse import Tree, parse_bash

# A handful of recent scripts per thread: B, C, display and the deny-side scan all read the
# same wrapper script within one projection. Trees are per thread because tree-sitter trees
# must not be shared across threads without copying.
_CACHE_SIZE = 4

# The derived results (immutable tuples of frozen records) are memoised process-wide with
# this many entries per function, so one script feeding B, C, display and the deny-side
# scan is walked once per function, not once per caller.
RESULT_CACHE_SIZE = 8
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
