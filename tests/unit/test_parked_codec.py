"""A parked call stored as JSON (never pickle): round trips, re-projection check, bad records."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from shellgate.common.errors import ParkedCallChangedError
from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import Policy
from shellgate.router.runtime.approvals.parked_codec import decode_parked, encode_parked, rebuild
from shellgate.router.runtime.call.events import ApprovalKind, Termination
from shellgate.router.runtime.call.state import (
    ApprovalSubject,
    AwaitingApproval,
    Call,
    Finished,
    Parked,
    Running,
)

from tests.integration.runtime_support import call_item, make_turn

BATCH = ["echo one", "touch two", "echo three"]
HOST = HostContext(policy=Policy(), parent_env={"PATH": "/usr/bin:/bin"})


def _project(command: list[str], cwd: str = "/tmp") -> tuple[object, object]:
    turn = make_turn(cwd)
    item = call_item("shell_command", {"command": command, "login": False}, "c-1")
    return project(item, turn, HOST), turn


def _awaiting(kind: ApprovalKind, **parked: object) -> AwaitingApproval:
    projected, turn = _project(BATCH)
    call = Call(projected, turn, time.monotonic() - 2, time.time() - 2, b"\x00origin\xff")  # type: ignore[arg-type]
    element = call.elements[1]
    subject = ApprovalSubject(("/bin/bash", "-c", "touch two"), "/tmp", "local", element)
    running = Running(1, ("one\n",), True, ("w1", "wö"))
    return AwaitingApproval(call, running, Parked(kind, 1, "why", subject=subject, **parked))  # type: ignore[arg-type]


RETRY = Finished("denied", Termination.EXITED, False, 1, None, 12, True, ("w",))


@pytest.mark.parametrize(
    "kind, fields",
    [
        (ApprovalKind.EXEC_POLICY, {"amendment": ("touch",), "key": "k" * 64}),
        (ApprovalKind.EXEC_POLICY, {"amendment": None, "key": "k" * 64}),
        (ApprovalKind.SANDBOX_RETRY, {"amendment": None, "key": "r" * 64, "retry_result": RETRY}),
    ],
)
def test_round_trip_rebuilds_the_same_parked_call(kind: ApprovalKind, fields: dict[str, object]) -> None:
    awaiting = _awaiting(kind, **fields)
    text = encode_parked(awaiting)
    assert "pickle" not in text and json.loads(text)["format"] == 1
    stored = decode_parked(text)
    assert stored.origin == b"\x00origin\xff"
    assert stored.running == awaiting.running
    # The live element is not stored: it comes back from the re-projection.
    assert stored.parked == dataclasses.replace(
        awaiting.parked, subject=dataclasses.replace(awaiting.parked.subject, element=None)
    )
    projected, turn = _project(BATCH)
    again = rebuild(stored, projected, turn)  # type: ignore[arg-type]
    assert again.parked == awaiting.parked and again.running == awaiting.running
    assert again.call.projected == awaiting.call.projected
    # The call keeps its start (2 s ago): the abort text counts from the first Execute. The
    # upper bound only rules out a nonsense start, so it leaves a stalled box a minute.
    assert 1.5 < time.monotonic() - again.call.started_at < 60


def test_a_different_projection_is_refused() -> None:
    stored = decode_parked(encode_parked(_awaiting(ApprovalKind.EXEC_POLICY, amendment=None, key="k" * 64)))
    for command, cwd in ((["echo one", "touch other", "echo three"], "/tmp"), (BATCH, "/var")):
        projected, turn = _project(command, cwd)
        with pytest.raises(ParkedCallChangedError, match="no longer projects"):
            rebuild(stored, projected, turn)  # type: ignore[arg-type]
    # Elements that already ran are not part of the check.
    projected, turn = _project(["echo changed", "touch two", "echo three"])
    rebuild(stored, projected, turn)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(format=2),
        lambda d: d.update(origin="not base64!"),
        lambda d: d["running"].update(index="1"),
        lambda d: d["parked"].update(kind="os.system"),
        lambda d: d["parked"]["subject"].update(argv=[1, 2]),
        lambda d: d["parked"].update(retry_result={"text": "x"}),
        lambda d: d.pop("fingerprint"),
        lambda d: d.update(parked_at="soon"),
        lambda d: d.update(trace={"traceparent": 7}),
    ],
)
def test_a_bad_record_is_refused_not_guessed(mutate: object) -> None:
    data = json.loads(encode_parked(_awaiting(ApprovalKind.EXEC_POLICY, amendment=None, key="k" * 64)))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(ParkedCallChangedError, match="cannot be read"):
        decode_parked(json.dumps(data))
    with pytest.raises(ParkedCallChangedError):
        decode_parked(b"\x80not json")


def test_parking_time_and_trace_context_are_optional_fields() -> None:
    awaiting = _awaiting(ApprovalKind.EXEC_POLICY, amendment=None, key="k" * 64)
    context = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    stored = decode_parked(encode_parked(awaiting, 1_700_000_000.5, context))
    assert (stored.parked_at, dict(stored.trace_context)) == (1_700_000_000.5, context)
    # A record written before the fields existed (same FORMAT) still reads back.
    data = json.loads(encode_parked(awaiting))
    del data["parked_at"], data["trace"]
    older = decode_parked(json.dumps(data))
    assert (older.parked_at, dict(older.trace_context)) == (None, {})
