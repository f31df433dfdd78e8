"""Unified-exec pure rules (spec 05 §3.1–§3.5)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.output.unified_rules import (
    ProcessUsage,
    allocate_process_id,
    clamp_exec_yield_time_ms,
    clamp_write_stdin_yield_time_ms,
    process_id_to_prune,
    process_limit_warning,
    should_prune,
    unified_max_output_tokens,
)

SETTINGS = settings(max_examples=200, deadline=None)


def test_exec_yield_clamp() -> None:
    assert clamp_exec_yield_time_ms(None) == 10_000
    assert clamp_exec_yield_time_ms(0) == 250
    assert clamp_exec_yield_time_ms(1) == 250
    assert clamp_exec_yield_time_ms(999_999) == 30_000
    assert clamp_exec_yield_time_ms(1_000, windows=True) == 10_000
    assert clamp_exec_yield_time_ms(20_000, windows=True) == 20_000


def test_write_stdin_yield_clamp() -> None:
    assert clamp_write_stdin_yield_time_ms("x", None) == 250
    assert clamp_write_stdin_yield_time_ms("x", 999_999) == 30_000
    assert clamp_write_stdin_yield_time_ms("", None) == 5_000
    assert clamp_write_stdin_yield_time_ms("", 1) == 5_000
    assert clamp_write_stdin_yield_time_ms("", 999_999) == 300_000
    assert clamp_write_stdin_yield_time_ms("", 999_999, 60_000) == 60_000
    # The configured ceiling never goes below the 5 s poll floor.
    assert clamp_write_stdin_yield_time_ms("", 999_999, 1_000) == 5_000


@SETTINGS
@given(st.text(max_size=3), st.integers(min_value=0, max_value=10**7))
def test_write_stdin_yield_always_in_range(chars: str, yield_ms: int) -> None:
    got = clamp_write_stdin_yield_time_ms(chars, yield_ms)
    if chars:
        assert 250 <= got <= 30_000
    else:
        assert 5_000 <= got <= 300_000


def test_output_budget_only_lowers() -> None:
    tok = TruncationPolicy.tokens
    assert unified_max_output_tokens(None, tok(10_000)) == tok(10_000)
    assert unified_max_output_tokens(50, tok(10_000)) == tok(50)
    assert unified_max_output_tokens(100_000, tok(10_000)) == tok(10_000)
    assert unified_max_output_tokens(None, tok(20_000)) == tok(10_000)
    assert unified_max_output_tokens(100_000, tok(50_000)) == tok(50_000)
    byte = TruncationPolicy.bytes(10_000)
    for requested in (None, 2_500, 3_000, 100_000):
        assert unified_max_output_tokens(requested, byte) == byte
    assert unified_max_output_tokens(50, byte) == tok(50)
    assert unified_max_output_tokens(0, byte) == tok(0)


@SETTINGS
@given(
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    st.sampled_from(["tokens", "bytes"]),
    st.integers(min_value=0, max_value=10**6),
)
def test_output_budget_never_exceeds_turn(requested: int | None, unit: str, limit: int) -> None:
    turn = TruncationPolicy.tokens(limit) if unit == "tokens" else TruncationPolicy.bytes(limit)
    assert unified_max_output_tokens(requested, turn).byte_budget <= turn.byte_budget


def test_process_ids() -> None:
    assert allocate_process_id([], deterministic=True) == 1000
    assert allocate_process_id([1000, 1001], deterministic=True) == 1002
    rng = random.Random(7)
    taken = {rng.randrange(1000, 100_000) for _ in range(50)}
    for _ in range(100):
        pid = allocate_process_id(taken, deterministic=False, randint=rng.randrange)
        assert 1000 <= pid < 100_000 and pid not in taken
    # A source that first returns a used id is retried.
    seq = iter([1500, 1500, 1501])
    assert allocate_process_id({1500}, deterministic=False, randint=lambda a, b: next(seq)) == 1501
    with pytest.raises(ValueError):
        allocate_process_id([], deterministic=False)


def test_random_process_id_counts_only_ids_inside_the_range() -> None:
    every = range(1000, 100_000)
    with pytest.raises(RuntimeError, match="no unified exec process id is free"):
        allocate_process_id(every, deterministic=False, randint=random.Random(1).randrange)
    # Ids outside the range never make it look full; the one free id is found.
    almost = [pid for pid in every if pid != 4242] + [5, 100_000, 250_000]
    seq = iter([1000, 99_999, 4242])
    assert allocate_process_id(almost, deterministic=False, randint=lambda a, b: next(seq)) == 4242


def _procs(spec: list[tuple[int, bool]]) -> list[ProcessUsage]:
    return [ProcessUsage(pid, float(pid), exited) for pid, exited in spec]


def test_pruning_prefers_lru_exited_outside_protected() -> None:
    procs = _procs([(i, i in (3, 10)) for i in range(1, 11)])
    assert process_id_to_prune(procs) == 1  # exited ones are protected; LRU wins
    procs = _procs([(i, i in (1, 2)) for i in range(1, 11)])
    assert process_id_to_prune(procs) == 1
    procs = _procs([(i, i == 2) for i in range(1, 11)])
    assert process_id_to_prune(procs) == 2
    assert process_id_to_prune(_procs([(i, True) for i in range(1, 9)])) is None


def test_limits_and_warning() -> None:
    assert not should_prune(63) and should_prune(64)
    assert process_limit_warning(59) is None
    assert process_limit_warning(60) == (
        "The maximum number of unified exec processes you can keep open is 60 and you "
        "currently have 60 processes open. Reuse older processes or close them to prevent "
        "automatic pruning of old processes"
    )
