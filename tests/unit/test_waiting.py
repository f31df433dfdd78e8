"""tests/waiting.py: the one polling helper returns the value, names what timed out, and
lets only the exceptions it was told to ignore count as "not yet"."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.waiting import eventually, eventually_async


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count(1)
    assert eventually(lambda: [n] if (n := next(calls)) >= 3 else [], "three calls", 5, 0) == [3]


def test_a_timeout_names_what_and_the_last_result() -> None:
    with pytest.raises(AssertionError, match=r"not within 0\.01 s: the moon \(last result: 0\)"):
        eventually(lambda: 0, "the moon", timeout_s=0.01, interval_s=0.001)


def test_what_may_be_computed_when_it_timed_out() -> None:
    seen: list[int] = []
    with pytest.raises(AssertionError, match=r"no 3 among \[1(, 1)*\]"):
        eventually(lambda: seen.append(1), lambda: f"no 3 among {seen}", 0.01, 0.02)


def test_ignored_errors_mean_not_yet_and_others_propagate() -> None:
    calls = itertools.count()

    def flaky() -> str:
        if next(calls) < 2:
            raise ConnectionRefusedError("not listening yet")
        return "up"

    assert eventually(flaky, "the port", 5, 0, ignoring=(OSError,)) == "up"
    with pytest.raises(AssertionError, match="last error: ConnectionRefusedError"):
        eventually(flaky_forever, "the port", 0.01, 0.001, ignoring=(OSError,))
    with pytest.raises(KeyError):
        eventually(lambda: {}["missing"], "a key", 5, 0, ignoring=(OSError,))


def flaky_forever() -> str:
    raise ConnectionRefusedError("never")


def test_async_twin_awaits_coroutine_checks_and_plain_ones() -> None:
    async def main() -> None:
        calls = itertools.count(1)

        async def check() -> int:
            return n if (n := next(calls)) >= 2 else 0

        assert await eventually_async(check, "two calls", 5, 0) == 2
        assert await eventually_async(lambda: "plain", "a plain check", 5, 0) == "plain"
        with pytest.raises(AssertionError, match=r"not within 0\.01 s: never"):
            await eventually_async(lambda: None, "never", 0.01, 0.001)

    asyncio.run(main())
