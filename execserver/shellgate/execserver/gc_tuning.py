"""Garbage-collector settings for a long-running daemon (both daemons apply them at start)."""

from __future__ import annotations

import gc

# Allocations between young collections (CPython's default is 700). One call allocates a
# few thousand objects (protobuf wrappers, events, frozen dataclasses), so the default
# collected the young generation several times per call.
GEN0_THRESHOLD = 20_000


def tune_gc() -> None:
    """Freeze what start-up allocated and collect the young generation less often.

    The objects alive after start-up (modules, grammars, configuration) move to the
    permanent generation, so an occasional full collection no longer walks them; cycles
    made while serving are still collected, just in larger batches.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
