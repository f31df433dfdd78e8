"""Both daemons freeze their start-up objects and collect the young generation less often."""

from __future__ import annotations

import gc

from shellgate.execserver.gc_tuning import GEN0_THRESHOLD, tune_gc


def test_tune_gc_freezes_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == (GEN0_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > 0
        # Cycles made afterwards are still collected.
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
