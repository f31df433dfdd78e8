"""Fixtures shared by integration test modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.console_support import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for a module's console tests (skipped where it is absent)."""
    with chromium() as driver:
        yield driver
