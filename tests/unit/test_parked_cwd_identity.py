"""The approved cwd's identity travels with a parked call and into the approval's answer."""

from __future__ import annotations

import json
import time

import pytest
from shellgate.common.errors import ParkedCallChangedError
from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import Policy
from shellgate.router.runtime.approvals.parked_codec import decode_parked, encode_parked
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision
from shellgate.router.runtime.call.events import ApprovalKind
from shellgate.router.runtime.call.state import (
    ApprovalSubject,
    Approved,
    AwaitingApproval,
    Call,
    Parked,
    Running,
)

from tests.integration.runtime_support import call_item, make_turn

HOST = HostContext(policy=Policy(), parent_env={"PATH": "/usr/bin:/bin"})


def _awaiting(identity: tuple[int, int] | None) -> AwaitingApproval:
    turn = make_turn("/tmp")
    item = call_item("shell_command", {"command": "touch x", "login": False}, "c-1")
    projected = project(item, turn, HOST)
    call = Call(projected, turn, time.monotonic(), time.time(), b"origin")
    subject = ApprovalSubject(("/bin/bash", "-c", "touch x"), "/tmp", "local", None)
    parked = Parked(ApprovalKind.EXEC_POLICY, 0, "why", None, "k" * 64, subject,
                    cwd_identity=identity)  # fmt: skip
    return AwaitingApproval(call, Running(0, (), False, ()), parked)


@pytest.mark.parametrize("identity", [(2049, 1234567), (-1, -1), None])
def test_round_trip_and_answers(identity: tuple[int, int] | None) -> None:
    stored = decode_parked(encode_parked(_awaiting(identity)))
    assert stored.parked.cwd_identity == identity
    for decision in (
        ApprovalDecision.APPROVED,
        ApprovalDecision.APPROVED_FOR_SESSION,
    ):
        answer = stored.parked.answer(decision)
        assert isinstance(answer, Approved) and answer.cwd_identity == identity


def test_a_record_without_the_field_reads_back_without_identity() -> None:
    data = json.loads(encode_parked(_awaiting((1, 2))))
    del data["parked"]["cwd_identity"]
    assert decode_parked(json.dumps(data)).parked.cwd_identity is None


@pytest.mark.parametrize("bad", [[1], ["1", 2], [1, True], {"dev": 1}])
def test_a_bad_identity_is_refused(bad: object) -> None:
    data = json.loads(encode_parked(_awaiting((1, 2))))
    data["parked"]["cwd_identity"] = bad
    with pytest.raises(ParkedCallChangedError):
        decode_parked(json.dumps(data))
