"""A stored completed event: the same JSON as `dataclasses.asdict` gave, and it round-trips."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from shellgate.router.runtime.call.events import CompletedEvent, Termination
from shellgate.router.runtime.call.ledger import completed_from_json, completed_to_json

EVENTS = [
    CompletedEvent('{"type":"function_call_output"}', "Exit code: 0\nhi\n", True, 0, None, 3,
                   None, False, Termination.EXITED),
    CompletedEvent("{}", "héllo \u2028 \"q\"", False, None, 1042, 10_000, 12_345, True,
                   Termination.TIMED_OUT, ("warn one", "warn two"), "why"),
]  # fmt: skip


@pytest.mark.parametrize("event", EVENTS)
def test_completed_json_is_what_asdict_gave_and_round_trips(event: CompletedEvent) -> None:
    text = completed_to_json(event)
    assert text == json.dumps(asdict(event), separators=(",", ":"), ensure_ascii=False)
    assert completed_from_json(text) == event
