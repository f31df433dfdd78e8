"""The test process's own descriptor limit, raised for tests that open many sockets."""

from __future__ import annotations

import resource

import pytest


def raise_own_nofile(needed: int) -> None:
    """Raise this process's soft `nofile` to `needed` (within the hard limit), or skip."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or (soft < needed and hard == resource.RLIM_INFINITY):
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        pytest.skip(f"this test needs {needed} descriptors")
