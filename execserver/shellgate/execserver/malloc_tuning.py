"""glibc malloc thresholds for a daemon that moves output in 512 KiB buffers.

Every output chunk is a fresh bytes object of up to 512 KiB (the pipe read, then the
encoded message). With glibc's dynamic thresholds such a buffer sits right at the mmap /
heap-trim boundary, so the heap top is trimmed and faulted back in again and again:
page faults and page clearing on every chunk. Fixed thresholds keep those pages mapped:
at most TRIM_THRESHOLD_BYTES of free heap stays resident, a bounded price for a Start
stream that costs measurably less CPU per byte.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

MIB = 1024 * 1024
# Allocations below this come from the heap (a 512 KiB chunk never gets its own mmap).
MMAP_THRESHOLD_BYTES = 2 * MIB
# Free memory at the heap top is returned to the kernel only beyond this.
TRIM_THRESHOLD_BYTES = 8 * MIB
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> bool:
    """Set the thresholds (glibc only, best effort); True when both were applied."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
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
