"""The MCP front's event store: replay after an id, one store per session, every bound."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed")

import mcp.types as types
from mcp.server.streamable_http import EventMessage
from shellgate.mcp import event_store
from shellgate.mcp.event_store import EventBudget, SessionEvents


def _note(text: str) -> types.JSONRPCNotification:
    return types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": text}
    )


def _answer(request_id: int, text: str) -> types.JSONRPCResponse:
    return types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"text": text})


def _replay(store: SessionEvents, last_event_id: str) -> tuple[str | None, list[EventMessage]]:
    sent: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        sent.append(event)

    async def main() -> str | None:
        return await store.replay_events_after(last_event_id, collect)

    return anyio.run(main), sent


def _store(store: SessionEvents, stream: str, message: Any) -> str:
    async def main() -> str:
        return await store.store_event(stream, message)

    return anyio.run(main)


def test_replay_after_the_priming_event_gives_what_followed() -> None:
    store = EventBudget().session()
    priming = _store(store, "7", None)
    first = _store(store, "7", _note("working"))
    _store(store, "8", _note("another stream"))
    _store(store, "7", _answer(7, "done"))
    stream, sent = _replay(store, priming)
    assert stream == "7"
    assert [e.message for e in sent] == [_note("working"), _answer(7, "done")]
    assert sent[0].event_id == first
    stream, sent = _replay(store, first)
    assert stream == "7" and [e.message for e in sent] == [_answer(7, "done")]
    for unknown in ("99-1", "x", "", "1-", "-1", "1-2-3"):
        assert _replay(store, unknown) == (None, [])


def test_sessions_do_not_share_streams() -> None:
    # Every client numbers its requests from 0: the same stream id in two sessions.
    budget = EventBudget()
    alice, bob = budget.session(), budget.session()
    alice_priming = _store(alice, "1", None)
    bob_priming = _store(bob, "1", None)
    _store(alice, "1", _answer(1, "alice's"))
    _store(bob, "1", _answer(1, "bob's"))
    assert [e.message for e in _replay(alice, alice_priming)[1]] == [_answer(1, "alice's")]
    assert [e.message for e in _replay(bob, bob_priming)[1]] == [_answer(1, "bob's")]


def test_a_stream_keeps_its_newest_events_within_count_and_bytes() -> None:
    store = EventBudget().session()
    priming = _store(store, "1", None)
    for n in range(event_store.MAX_STREAM_EVENTS + 50):
        _store(store, "1", _note(f"n{n}"))
    _, sent = _replay(store, priming)
    assert len(sent) == event_store.MAX_STREAM_EVENTS
    assert sent[-1].message == _note(f"n{event_store.MAX_STREAM_EVENTS + 49}")
    sized = EventBudget().session()
    priming = _store(sized, "2", None)
    for n in range(5):
        _store(sized, "2", _note(f"{n}" * (event_store.MAX_STREAM_BYTES // 3)))
    assert sized.retained_bytes <= event_store.MAX_STREAM_BYTES
    _, sent = _replay(sized, priming)
    assert [e.message for e in sent][-1] == _note("4" * (event_store.MAX_STREAM_BYTES // 3))
    assert 1 <= len(sent) < 3  # a third of the cap each, plus their JSON: two fit


def test_a_response_too_large_to_keep_is_kept_as_an_error() -> None:
    store = EventBudget().session()
    priming = _store(store, "3", None)
    huge = "y" * (event_store.MAX_STREAM_BYTES + 1)
    _store(store, "3", _note(huge))  # a notification that large is not kept at all
    _store(store, "3", _answer(3, huge))
    _, sent = _replay(store, priming)
    [only] = [e.message for e in sent]
    assert isinstance(only, types.JSONRPCError) and only.id == 3
    assert "larger than a resumable stream keeps" in only.error.message
    assert store.retained_bytes < 4096


def test_a_session_keeps_its_newest_streams() -> None:
    store = EventBudget().session()
    primings = []
    for n in range(event_store.MAX_SESSION_STREAMS + 5):
        primings.append(_store(store, str(n), None))
        _store(store, str(n), _answer(n, "ok"))
    assert [_replay(store, p)[0] for p in primings[:5]] == [None] * 5
    assert _replay(store, primings[5])[0] == "5"


def test_all_sessions_together_stay_within_the_budget() -> None:
    budget = EventBudget(max_bytes=200_000)
    sessions = [budget.session() for _ in range(4)]
    primings = []
    for round_ in range(5):
        for n, store in enumerate(sessions):
            stream = f"{round_}"
            primings.append((store, _store(store, stream, None)))
            _store(store, stream, _answer(round_, f"{n}" * 20_000))
            assert budget.used <= budget.max_bytes
    assert budget.used == sum(store.retained_bytes for store in sessions)
    # The oldest streams went first; the newest of every session is still there.
    assert _replay(*primings[0])[0] is None
    assert all(_replay(*p)[0] == "4" for p in primings[-4:])


def test_a_closed_session_releases_everything() -> None:
    budget = EventBudget()
    store = budget.session()
    priming = _store(store, "1", None)
    _store(store, "1", _answer(1, "x" * 1000))
    assert budget.used > 1000
    store.close()
    assert budget.used == 0
    assert _replay(store, priming) == (None, [])
    _store(store, "1", _answer(1, "late"))  # the SDK may still route a last message
    assert budget.used == 0 and store.retained_bytes == 0


def test_events_stored_during_a_replay_are_replayed_too() -> None:
    store = EventBudget().session()
    priming = _store(store, "1", None)
    _store(store, "1", _note("before"))
    sent: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        sent.append(event)
        if len(sent) == 1:  # the call's answer lands while the replay is being sent
            await store.store_event("1", _answer(1, "during"))

    async def main() -> str | None:
        return await store.replay_events_after(priming, collect)

    assert anyio.run(main) == "1"
    assert [e.message for e in sent] == [_note("before"), _answer(1, "during")]
