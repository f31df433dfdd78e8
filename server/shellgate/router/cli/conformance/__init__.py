"""The `shellgate eval` conformance entry point: spec functions by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

EvalFn = Callable[[Any], Any]

# One module per area; each exposes FUNCTIONS: dict[str, EvalFn]. Imported lazily so a
# broken area does not take the others down.
_AREAS = (
    "decode_fns",
    "projection_fns",
    "policy_fns",
    "patch_fns",
    "output_fns",
    "execserver_fns",
)


class EvalFailure(Exception):
    """A function failed (not a typed error value); may carry a human rendering."""

    def __init__(self, message: str, rendered: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.rendered = rendered


def registry() -> dict[str, EvalFn]:
    """All served functions by `fn` name."""
    table: dict[str, EvalFn] = {}
    for area in _AREAS:
        module = importlib.import_module(f"{__name__}.{area}")
        table.update(module.FUNCTIONS)
    return table
