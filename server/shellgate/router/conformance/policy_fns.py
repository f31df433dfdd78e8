"""Conformance functions for `shellgate eval` (area: policy)."""

from __future__ import annotations

from shellgate.router.conformance import EvalFn

FUNCTIONS: dict[str, EvalFn] = {}
