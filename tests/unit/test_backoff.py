"""The one backoff helper: doubling up to the cap, restarting after a success."""

from __future__ import annotations

import pytest
from shellgate.common.backoff import Backoff


def test_doubles_up_to_the_cap_and_resets() -> None:
    backoff = Backoff(0.5, 4.0)
    assert [backoff.next() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    backoff.reset()
    assert backoff.current == 0.5 and backoff.next() == 0.5


@pytest.mark.parametrize(("initial", "cap", "factor"), [(0, 1, 2), (2, 1, 2), (1, 2, 0.5)])
def test_nonsense_settings_are_refused(initial: float, cap: float, factor: float) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        Backoff(initial, cap, factor)
