"""Retention: seq, eviction, Read selection (the process table's TTLs on real processes:
tests/integration/test_process_table_ttl.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.process.base import ExitStatus, Stream
from shellgate.common.process.retention import Retention, select_chunks


def test_seq_order_eviction_and_exit_close() -> None:
    r = Retention(max_bytes=10)
    for _ in range(5):
        r.add_output(Stream.STDOUT, b"abcd")
    assert r.retained_bytes == 8 and r.first_retained_seq == 4
    assert r.mark_exited(ExitStatus(code=0)) == 6 and r.mark_closed() == 7
    result = r.read(0, None)
    assert [c.seq for c in result.chunks] == [4, 5] and result.next_seq == 6


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 50), max_size=20),
    after=st.integers(0, 25),
    max_bytes=st.none() | st.integers(0, 200),
)
def test_selection_rule_properties(sizes: list[int], after: int, max_bytes: int | None) -> None:
    retained = list(enumerate(sizes, 1))
    seqs, next_seq = select_chunks(retained, len(sizes) + 1, after, max_bytes)
    candidates = [s for s, _ in retained if s > after]
    assert seqs == candidates[: len(seqs)]  # a prefix, in order
    if candidates:
        assert seqs  # the first chunk is always included
    total = sum(sizes[s - 1] for s in seqs)
    if max_bytes is not None and len(seqs) > 1:
        assert total <= max_bytes
    assert next_seq == (seqs[-1] + 1 if seqs else len(sizes) + 1)
