"""Process-wide settings for a long-running daemon: glibc malloc thresholds and the GC.

Both daemons apply `tune_process()` once at start, from their command-line entry points
(never from the library, so embedding a server does not retune its host process).
"""

from __future__ import annotations

import ctypes
import gc
import logging

log = logging.getLogger(__name__)

MIB = 1024 * 1024
# Every output chunk is a fresh bytes object of up to 512 KiB (the pipe read, then the
# encoded message). With glibc's dynamic thresholds such a buffer sits right at the mmap /
# heap-trim boundary, so the heap top is trimmed and faulted back in again and again.
# Fixed thresholds keep those pages mapped: allocations below MMAP_THRESHOLD_BYTES come
# from the heap, and at most TRIM_THRESHOLD_BYTES of free heap stays resident.
MMAP_THRESHOLD_BYTES = 2 * MIB
TRIM_THRESHOLD_BYTES = 8 * MIB
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Allocations between young collections (CPython's default is 700). One call allocates a
# few thousand objects (protobuf wrappers, events, frozen dataclasses), so the default
# collected the young generation several times per call.
GEN0_THRESHOLD = 20_000


def tune_malloc() -> bool:
    """Set the malloc thresholds (glibc only, best effort); True when both were applied."""
    try:
        # The symbols already loaded into this process: no library search at start-up.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
    if not ok:
        log.debug("mallopt refused the thresholds; keeping glibc's defaults")
    return ok


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


def tune_process() -> None:
    """Both settings; call once the server is up (what it loaded is then frozen)."""
    tune_malloc()
    tune_gc()
