"""Streaming capture bounds: the unified head/tail buffer and the classic 1 MiB caps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.output.head_tail import (
    CLASSIC_STREAM_MAX_BYTES,
    CappedStream,
    HeadTailBuffer,
    aggregate_output,
)

SETTINGS = settings(max_examples=300, deadline=None)
CHUNKS = st.lists(st.binary(max_size=40), max_size=30)


@SETTINGS
@given(st.integers(min_value=0, max_value=64), CHUNKS)
def test_head_tail_matches_reference_model(max_bytes: int, chunks: list[bytes]) -> None:
    buf = HeadTailBuffer(max_bytes)
    for chunk in chunks:
        buf.push(chunk)
        # Memory stays bounded after every push, not only at the end.
        assert buf.retained_bytes <= max_bytes
    data = b"".join(chunks)
    head_budget = max_bytes // 2
    tail_budget = max_bytes - head_budget
    if max_bytes == 0:
        head, tail = b"", b""
    else:
        head = data[:head_budget]
        rest = data[head_budget:]
        tail = rest[len(rest) - tail_budget :] if len(rest) > tail_budget else rest
    snap = buf.snapshot()
    assert snap.head == head
    assert snap.tail == tail
    assert snap.omitted_bytes == len(data) - len(head) - len(tail)
    assert snap.raw_byte_count == len(data) == buf.total_bytes


def test_head_tail_drain_resets() -> None:
    buf = HeadTailBuffer(8)
    buf.push(b"0123456789abcdef")
    snap = buf.drain()
    assert (snap.head, snap.tail, snap.omitted_bytes) == (b"0123", b"cdef", 8)
    assert buf.retained_bytes == 0 and buf.omitted_bytes == 0
    buf.push(b"xy")
    assert buf.drain().to_bytes() == b"xy"


def test_default_unified_budget_is_512k_each_side() -> None:
    buf = HeadTailBuffer()
    buf.push(b"a" * 600_000)
    buf.push(b"b" * 600_000)
    snap = buf.snapshot()
    assert len(snap.head) == 524_288 and len(snap.tail) == 524_288
    assert snap.omitted_bytes == 1_200_000 - 1_048_576


@SETTINGS
@given(CHUNKS, st.integers(min_value=0, max_value=50))
def test_capped_stream_keeps_leading_bytes(chunks: list[bytes], cap: int) -> None:
    stream = CappedStream(cap)
    for chunk in chunks:
        stream.push(chunk)
    data = b"".join(chunks)
    assert stream.data == data[:cap]
    assert stream.total_bytes == len(data)


@SETTINGS
@given(st.binary(max_size=60), st.binary(max_size=60), st.integers(min_value=0, max_value=90))
def test_aggregate_output_bounds(stdout: bytes, stderr: bytes, cap: int) -> None:
    out = aggregate_output(stdout, stderr, cap)
    assert len(out) <= cap or out == stdout + stderr
    if len(stdout) + len(stderr) <= cap:
        assert out == stdout + stderr
        return
    assert len(out) == cap
    # stdout's leading bytes, then stderr's leading bytes.
    cut = next(i for i in range(len(out) + 1) if out[i:] == stderr[: len(out) - i])
    assert out[:cut] == stdout[:cut]


def test_aggregate_output_thirds() -> None:
    cap = CLASSIC_STREAM_MAX_BYTES
    out = aggregate_output(b"o" * cap, b"e" * cap)
    assert out == b"o" * (cap // 3) + b"e" * (cap - cap // 3)
    # Budget stderr leaves unused goes back to stdout.
    out = aggregate_output(b"o" * cap, b"e" * 10)
    assert out == b"o" * (cap - 10) + b"e" * 10


def test_skipped_bytes_are_omitted_and_close_the_head() -> None:
    buf = HeadTailBuffer(8)
    buf.push(b"ab")
    buf.push(b"cdef")  # head "abcd", tail "ef"
    buf.skip(100)  # lost after "ef": the tail is middle now, the head takes no more
    buf.push(b"XYZ")
    snap = buf.drain()
    assert (snap.head, snap.tail, snap.omitted_bytes) == (b"abcd", b"XYZ", 102)
    assert snap.raw_byte_count == 2 + 4 + 100 + 3
    # A drain starts over: the next head fills again.
    buf.push(b"123456")
    assert buf.drain().head == b"1234"


@SETTINGS
@given(st.integers(min_value=0, max_value=64), CHUNKS, st.integers(min_value=0, max_value=50))
def test_skip_keeps_every_byte_counted(max_bytes: int, chunks: list[bytes], lost: int) -> None:
    buf = HeadTailBuffer(max_bytes)
    half = len(chunks) // 2
    for chunk in chunks[:half]:
        buf.push(chunk)
    buf.skip(lost)
    after = b"".join(chunks[half:])
    for chunk in chunks[half:]:
        buf.push(chunk)
    snap = buf.drain()
    assert snap.raw_byte_count == sum(map(len, chunks)) + lost
    if lost:
        # What is shown after the gap is a suffix of what arrived after it.
        assert after.endswith(snap.tail)
