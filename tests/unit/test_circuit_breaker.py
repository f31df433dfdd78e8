"""The per-daemon circuit breaker: opens on a failed connect, backs off, closes (issue 15)."""

from __future__ import annotations

from shellgate.router.runtime.environments.remote.breaker import BreakerSettings, CircuitBreaker


def test_breaker_opens_backs_off_and_closes() -> None:
    now = [10.0]
    breaker = CircuitBreaker(BreakerSettings(500, 2_000), clock=lambda: now[0])
    assert not breaker.open
    breaker.trip("connect to x timed out")
    assert breaker.open and breaker.opened_total == 1
    assert breaker.retry_delay_s() == 0.5
    assert breaker.refusal().startswith("connect to x timed out (circuit open")
    assert breaker.refused_total == 1
    delays = []
    for _ in range(4):
        breaker.retry_failed("still down")
        delays.append(breaker.retry_delay_s())
    assert delays == [1.0, 2.0, 2.0, 2.0]  # doubling, capped
    assert "still down" in breaker.describe() and breaker.refused_total == 1
    breaker.close()
    assert not breaker.open
    breaker.trip("again")
    assert breaker.retry_delay_s() == 0.5 and breaker.opened_total == 2
