"""Descriptor limits in tests: the test process's own, and a child daemon's."""

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


def nofile_prefix(nofile: int | None) -> list[str]:
    """A `prlimit` prefix setting a child's descriptor limit (soft and hard), or nothing.

    Never `preexec_fn`: it makes subprocess fork this gRPC-loaded process for real, and
    grpcio's fork handler can then crash the child before its exec (grpc/grpc#43055:
    "epoll_wait error: Bad file descriptor").
    """
    return [] if nofile is None else ["prlimit", f"--nofile={nofile}:{nofile}", "--"]
