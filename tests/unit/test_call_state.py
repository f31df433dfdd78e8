"""The call's state machine: every transition, and the impossible ones raising (spec 06 §3)."""

from __future__ import annotations

import dataclasses

import pytest
from shellgate.common.errors import InvalidArgumentError
from shellgate.router.output.texts import format_batch_output
from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import Policy
from shellgate.router.projection import ToolErrorOutcome
from shellgate.router.runtime.approvals.offer import offered_decisions
from shellgate.router.runtime.call.events import ApprovalDecision, ApprovalKind, Termination
from shellgate.router.runtime.call.state import (
    Aborted,
    ApprovalSubject,
    Approved,
    AwaitingApproval,
    Call,
    Denied,
    Ended,
    Finished,
    InvalidTransition,
    Parked,
    Running,
    advance,
    crash,
    resume,
)

from tests.integration.runtime_support import call_item, make_turn

D = ApprovalDecision
SUBJECT = ApprovalSubject(("/bin/bash", "-c", "touch a"), "/w", "local", None)
BATCH = ["echo one", "echo two", "echo three"]


def _call(name: str, args: dict[str, object]) -> Call:
    turn = make_turn("/tmp")
    host = HostContext(policy=Policy(), parent_env={"PATH": "/usr/bin:/bin"})
    return Call(project(call_item(name, {"login": False, **args}), turn, host), turn, 0.0)


def _batch() -> Call:
    return _call("shell_command", {"command": BATCH})


def _ok(text: str, **fields: object) -> Finished:
    return Finished(text, Termination.EXITED, True, exit_code=0, **fields)


def _parked(kind: ApprovalKind = ApprovalKind.EXEC_POLICY, index: int = 0, **fields: object) -> Parked:
    values: dict[str, object] = {"reason": "r", "amendment": None, "key": "k" * 64}
    values.update(fields)
    return Parked(kind, index, subject=SUBJECT, **values)


def test_call_shape() -> None:
    batch = _batch()
    assert (batch.size, batch.batch, len(batch.elements)) == (3, True, 3)
    single = _call("shell_command", {"command": "echo one"})
    assert (single.size, single.batch) == (1, False)
    unified = _call("exec_command", {"cmd": "echo one"})
    assert (unified.size, unified.batch) == (1, False)
    error = Call(project(call_item("shell_command", "{"), make_turn("/tmp"),
                         HostContext(policy=Policy())), make_turn("/tmp"), 0.0)  # fmt: skip
    assert isinstance(error.projected.outcome, ToolErrorOutcome)
    assert (error.size, error.batch, error.elements) == (1, False, ())


def test_finished_elements_run_on_then_summarise() -> None:
    call = _batch()
    state = advance(call, Running(), _ok("one", warnings=("w1",)))
    assert state == Running(1, ("one",), False, ("w1",))
    state = advance(call, state, _ok("two", truncated=True))
    assert state == Running(2, ("one", "two"), True, ("w1",))
    state = advance(call, state, _ok("three", warnings=("w3",), original_token_count=7))
    assert state == Ended(
        Finished(format_batch_output(["one", "two", "three"], []), Termination.EXITED, True,
                 exit_code=0, original_token_count=7, truncated=True, warnings=("w1", "w3"))
    )  # fmt: skip


def test_a_failed_batch_element_stops_the_batch() -> None:
    call = _batch()
    failed = Finished("boom", Termination.EXITED, False, exit_code=2)
    state = advance(call, advance(call, Running(), _ok("one")), failed)
    later = [call.elements[2].handler.argv[-1]]
    assert later == ["echo three"]
    assert state == Ended(
        Finished(format_batch_output(["one", "boom"], later), Termination.EXITED, False,
                 exit_code=2)
    )  # fmt: skip
    # A failure at the last element leaves nothing "not run".
    last = advance(call, Running(2, ("one", "two")), failed)
    assert isinstance(last, Ended) and isinstance(last.result, Finished)
    assert last.result.text == format_batch_output(["one", "two", "boom"], [])


def test_a_single_call_ends_with_its_own_answer() -> None:
    call = _call("exec_command", {"cmd": "echo one"})
    # A non-zero exit is still a successful unified answer; it ends the call as it is.
    done = Finished("text", Termination.YIELDED, True, exit_code=None, session_id=3,
                    warnings=("w",))  # fmt: skip
    assert advance(call, Running(), done) == Ended(done)
    failed = Finished("no", Termination.REJECTED, False)
    assert advance(call, Running(), failed) == Ended(failed)


def test_aborted_ends_the_call_with_the_warnings_so_far() -> None:
    call = _batch()
    state = advance(call, Running(), _ok("one", warnings=("w1",)))
    assert advance(call, state, Aborted(5, ("w2",))) == Ended(Aborted(5, ("w1", "w2")))


def test_parked_waits_and_resumes_at_the_same_element() -> None:
    call = _batch()
    running = advance(call, Running(), _ok("one"))
    parked = _parked(index=1)
    state = advance(call, running, parked)
    assert state == AwaitingApproval(call, Running(1, ("one",)), parked)
    assert resume(state, D.APPROVED) == (running, Approved(False))


@pytest.mark.parametrize(
    ("decision", "answer"),
    [
        (D.APPROVED, Approved(False)),
        (D.APPROVED_FOR_SESSION, Approved(False, remember="k" * 64)),
        (D.APPROVED_WITH_AMENDMENT, Approved(False, amendment=("touch",))),
        (D.DENIED, Denied()),
        (D.ABORT, Aborted()),
    ],
)
def test_exec_policy_answers(decision: ApprovalDecision, answer: object) -> None:
    assert _parked(amendment=("touch",)).answer(decision) == answer


def test_sandbox_retry_answers() -> None:
    sandboxed = Finished("Exit code: 1", Termination.EXITED, False, exit_code=1)
    parked = _parked(ApprovalKind.SANDBOX_RETRY, retry_result=sandboxed)
    assert parked.answer(D.APPROVED) == Approved(True)
    # Approved for the session runs the retry once; the bypass is never remembered.
    assert parked.answer(D.APPROVED_FOR_SESSION) == Approved(True)
    assert parked.answer(D.DENIED) is sandboxed
    assert parked.answer(D.ABORT) == Aborted()


def test_apply_patch_answers() -> None:
    parked = _parked(ApprovalKind.APPLY_PATCH)
    assert parked.answer(D.APPROVED_FOR_SESSION) == Approved(False, remember="k" * 64)
    assert parked.answer(D.DENIED) == Denied()


def test_offered_decisions() -> None:
    plain = (D.APPROVED, D.APPROVED_FOR_SESSION, D.DENIED, D.ABORT)
    assert offered_decisions(None) == plain
    assert offered_decisions(()) == plain
    assert offered_decisions(("touch",)) == (
        D.APPROVED, D.APPROVED_FOR_SESSION, D.APPROVED_WITH_AMENDMENT, D.DENIED, D.ABORT
    )
    assert _parked(amendment=("touch",)).offered == offered_decisions(("touch",))


def test_a_decision_not_on_offer_is_an_invalid_argument() -> None:
    state = advance(_batch(), Running(), _parked())
    with pytest.raises(InvalidArgumentError, match="decision: approved_with_amendment is not on offer"):
        resume(state, D.APPROVED_WITH_AMENDMENT)
    # The parked call is unchanged and still takes a valid answer.
    assert resume(state, D.DENIED) == (Running(), Denied())


def test_impossible_transitions_raise() -> None:
    call = _batch()
    ended = Ended(_ok("x"))
    awaiting = advance(call, Running(), _parked())
    for state in (ended, awaiting):
        with pytest.raises(InvalidTransition):
            advance(call, state, _ok("again"))
    with pytest.raises(InvalidTransition):
        advance(call, Running(3), _ok("past the end"))
    with pytest.raises(InvalidTransition):
        advance(call, Running(1), _parked(index=0))
    for state in (Running(), ended):
        with pytest.raises(InvalidTransition):
            resume(state, D.APPROVED)


def test_impossible_parked_values_raise() -> None:
    retry = Finished("x", Termination.EXITED, False)
    with pytest.raises(InvalidTransition):
        _parked(ApprovalKind.SANDBOX_RETRY)
    with pytest.raises(InvalidTransition):
        _parked(ApprovalKind.EXEC_POLICY, retry_result=retry)
    with pytest.raises(InvalidTransition):
        _parked(ApprovalKind.APPLY_PATCH, amendment=("touch",))
    with pytest.raises(InvalidTransition):
        _parked(ApprovalKind.SANDBOX_RETRY, amendment=("touch",), retry_result=retry)


def test_crash_answers_from_any_state() -> None:
    call = _batch()
    running = Running(1, ("one",), False, ("w",))
    awaiting = advance(call, running, _parked(index=1))
    for state in (running, awaiting, Ended(_ok("done", warnings=("w",)))):
        assert crash(state, "execution error: Boom") == Ended(
            Finished("execution error: Boom", Termination.TOOL_ERROR, False, warnings=("w",))
        )


def test_states_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Running().index = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        _parked().key = ""

