"""Which idle thread makes room at `max_threads` (runtime/threads/tally.eviction_victim).

A subject's own idle threads go first; another subject's only while that one holds more
than its fair share (max_threads / subjects holding threads); a subject below its share
takes room from the one most over it. Its integration twin, on a router with Redis:
tests/integration/test_thread_churn_state.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from shellgate.router.runtime.threads.registry import owned_thread_key
from shellgate.router.runtime.threads.tally import eviction_victim, fair_share, subject_of


@dataclass
class T:
    thread_id: str
    last_used: float
    busy: bool = False


def held(subject: str, n: int, start: float = 0.0, busy: bool = False) -> list[T]:
    return [T(owned_thread_key(subject, f"t{i}"), start + i, busy) for i in range(n)]


def sub(subject: str) -> str:
    return subject_of(owned_thread_key(subject, "x"))


def test_subject_of_an_owned_key_and_of_a_bare_id() -> None:
    assert len(sub("alice")) == 16 and sub("alice") != sub("bob")
    assert subject_of("plain-thread") == "" and subject_of("abc.def") == ""


def test_fair_share_splits_between_the_subjects_holding_threads() -> None:
    assert fair_share(100, ["a", "b", "a"]) == 50
    assert fair_share(100, []) == 100
    assert fair_share(2, ["a", "b", "c"]) == 1


def test_own_idle_thread_first_when_at_share() -> None:
    threads = held("alice", 6) + held("bob", 4, start=10)
    victim = eviction_victim(threads, sub("alice"), 10)
    assert victim is threads[0]  # her own least recently used


def test_below_its_share_a_subject_takes_from_the_one_over_it() -> None:
    threads = held("alice", 6) + held("bob", 4, start=10)
    assert eviction_victim(threads, sub("bob"), 10) is threads[0]  # alice's oldest


def test_never_below_another_subjects_share() -> None:
    # bob at his share with nothing idle; alice exactly at hers: nothing may go.
    threads = held("alice", 5) + held("bob", 5, start=10, busy=True)
    assert eviction_victim(threads, sub("bob"), 10) is None
    # alice's busy threads are never chosen either.
    threads = held("alice", 8, busy=True) + held("bob", 2, start=10, busy=True)
    assert eviction_victim(threads, sub("bob"), 10) is None


@given(st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), min_size=1, max_size=30),
       st.sampled_from("abcd"), st.integers(1, 30))  # fmt: skip
def test_a_victim_is_idle_and_leaves_every_other_subject_at_its_share(
    spec: list[tuple[str, bool]], who: str, max_threads: int
) -> None:
    threads = [T(owned_thread_key(s, f"t{i}"), float(i), busy) for i, (s, busy) in enumerate(spec)]
    victim = eviction_victim(threads, sub(who), max_threads)
    if victim is None:
        return
    assert not victim.busy
    owner = subject_of(victim.thread_id)
    if owner != sub(who):
        subjects = {subject_of(t.thread_id) for t in threads} | {sub(who)}
        share = fair_share(max_threads, subjects)
        assert sum(subject_of(t.thread_id) == owner for t in threads) > share
