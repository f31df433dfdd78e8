"""Conformance functions for `shellgate eval` (area: execserver)."""

from __future__ import annotations

from shellgate.router.conformance import EvalFn

FUNCTIONS: dict[str, EvalFn] = {}
