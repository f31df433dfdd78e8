"""Fixtures shared by integration test modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import router_harness
from tests.integration.console_support import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for a module's console tests (skipped where it is absent)."""
    with chromium() as driver:
        yield driver


@pytest.fixture(params=router_harness.EXECUTE_MODES)
def any_execute_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs the test once per way of calling Execute: the v1 stream, the coalesced stream
    and unary ExecuteOnce (tests.router_harness.execute follows the mode)."""
    monkeypatch.setattr(router_harness, "execute_mode", request.param)
    return str(request.param)
