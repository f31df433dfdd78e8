"""Process-wide tuning of both daemons: malloc thresholds and the garbage collector."""

from __future__ import annotations

import gc
import platform

import pytest
from shellgate.common.process_tuning import GEN0_THRESHOLD, tune_gc, tune_malloc


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


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_tune_malloc_applies_both_thresholds_on_glibc() -> None:
    assert tune_malloc() is True
