"""Retried call ids run once (runtime/call/ledger.py), and malformed items say why.

Real routers (in process, loopback), real processes; each command appends a line to a file
so the number of runs is counted by a side effect, not by the router's word.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.client import Client, Termination
from shellgate.client.errors import (
    FailedPreconditionError,
    UnavailableError,
)
from shellgate.v1 import common_pb2, router_pb2

from tests.integration.shared_support import REDIS_SERVER, redis_server, shared_router
from tests.router_harness import Router, function_item, router_config, running_router, turn
from tests.waiting import eventually

TURN = turn()


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    """One in-process router for the module."""
    with running_router() as running:
        yield running


def _item(log: Path, call_id: str, *, then: str = "") -> common_pb2.ToolCallItem:
    command = f"echo run >> {log}" + (f"; {then}" if then else "")
    return function_item("shell_command", {"command": command}, call_id=call_id)


def _request(thread: str, item: common_pb2.ToolCallItem) -> router_pb2.ExecuteRequest:
    return router_pb2.ExecuteRequest(thread_id=thread, turn=TURN, item=item)


def _completed(events: list[router_pb2.ExecuteResponse]) -> router_pb2.ExecutionCompleted:
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "projection" and kinds[-1] == "completed" and kinds.count("completed") == 1
    return events[-1].completed


def test_retry_while_running_attaches_and_runs_once(router: Router, tmp_path: Path) -> None:
    log, gate = tmp_path / "runs", tmp_path / "gate"
    item = _item(log, "r1", then=f"while [ ! -e {gate} ]; do sleep 0.02; done; echo finished")
    first: list[router_pb2.ExecuteResponse] = []
    worker = threading.Thread(target=lambda: first.extend(router.stub.Execute(_request("t-attach", item), timeout=30)))
    worker.start()
    eventually(log.exists, "the command's log file", 10, 0.01)
    # The retry arrives while the first run waits for the gate: it must attach, not spawn.
    retry = router.stub.Execute(_request("t-attach", item), timeout=30)
    head = next(retry)
    assert head.WhichOneof("event") == "projection"
    gate.touch()
    second = [head, *retry]
    worker.join(30)
    done_first, done_second = _completed(first), _completed(second)
    assert done_first == done_second
    assert "finished" in done_first.output_text and done_first.exit_code == 0
    assert log.read_text() == "run\n"


def test_retry_after_completion_returns_the_stored_result(router: Router, tmp_path: Path) -> None:
    log = tmp_path / "runs"
    item = _item(log, "r2")
    first = _completed(list(router.stub.Execute(_request("t-done", item), timeout=30)))
    time.sleep(0.05)  # a second run would have a different wall time, and a second line
    again = _completed(list(router.stub.Execute(_request("t-done", item), timeout=30)))
    assert again == first
    assert log.read_text() == "run\n"
    # The same call id on another thread is another call.
    _completed(list(router.stub.Execute(_request("t-other", item), timeout=30)))
    assert log.read_text() == "run\nrun\n"


def test_a_different_item_under_a_used_call_id_is_refused(router: Router, tmp_path: Path) -> None:
    log = tmp_path / "runs"
    with Client(f"127.0.0.1:{router.port}", thread_id="t-conflict") as client:
        client.run(_item(log, "r3"), TURN)
        with pytest.raises(FailedPreconditionError) as raised:
            client.run(_item(log, "r3", then="echo other"), TURN)
    assert raised.value.reason == "call_id_conflict" and "r3" in raised.value.details
    assert log.read_text() == "run\n"


def test_a_cancelled_call_answers_its_retry_with_the_abort_output(
    router: Router, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    item = _item(log, "r4", then="sleep 30")
    call = router.stub.Execute(_request("t-cancel", item), timeout=30)
    assert next(call).WhichOneof("event") == "projection"
    eventually(log.exists, "the command's log file", 10, 0.01)
    call.cancel()

    def cancelled_retry() -> router_pb2.ExecutionCompleted | None:
        retry = _completed(list(router.stub.Execute(_request("t-cancel", item), timeout=30)))
        return retry if retry.termination == router_pb2.TERMINATION_REASON_CANCELLED else None

    # The router notices the cancellation and records the abort output.
    retry = eventually(cancelled_retry, "the retry answered with the abort output", 10, 0)
    assert "aborted" in retry.output_text.lower()
    assert json.loads(retry.output_item_json)["call_id"] == "r4"
    assert log.read_text() == "run\n"


MALFORMED = [
    ("{bad json", "item is not valid JSON: "),
    ('{"type":"function_call","name":"shell_command","call_id":"m1","arguments":{"command":"echo"}}',
     "function_call: arguments must be a string, not an object"),
    ('{"type":"function_call","name":"shell_command","arguments":"{}"}', "function_call: call_id is missing"),
    ('{"type":"custom_tool_call","name":"apply_patch","call_id":"m2","input":5}',
     "custom_tool_call: input must be a string, not a number"),
]


@pytest.mark.parametrize(("raw", "reason"), MALFORMED)
def test_client_run_reports_a_malformed_item(router: Router, raw: str, reason: str) -> None:
    with Client(f"127.0.0.1:{router.port}") as client:
        done = client.run(common_pb2.ToolCallItem(raw_json=raw), TURN)
    assert done.termination is Termination.NO_TOOL_CALL
    assert done.reason.startswith(reason), done.reason
    assert done.output_item is None


def test_client_run_reports_tool_errors_in_the_output(router: Router) -> None:
    with Client(f"127.0.0.1:{router.port}") as client:
        unknown = client.run(function_item("nope", {}, call_id="m3"), TURN)
        wrong = client.run(function_item("shell_command", {"command": 5}, call_id="m4"), TURN)
    assert unknown.termination is Termination.TOOL_ERROR
    assert unknown.output_text == "unsupported call: nope"
    assert wrong.termination is Termination.TOOL_ERROR
    assert wrong.output_text.startswith("failed to parse function arguments: invalid type: integer `5`")


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
def test_retries_across_replicas(tmp_path: Path) -> None:
    log, gate = tmp_path / "runs", tmp_path / "gate"
    slow = _item(log, "s1", then=f"while [ ! -e {gate} ]; do sleep 0.02; done")
    with (
        redis_server() as url,
        shared_router(router_config(), url) as a,
        shared_router(router_config(), url) as b,
        Client(f"127.0.0.1:{a.port}", thread_id="t-shared") as on_a,
        Client(f"127.0.0.1:{b.port}", thread_id="t-shared") as on_b,
    ):
        first: list[object] = []
        worker = threading.Thread(target=lambda: first.append(on_a.run(slow, TURN)))
        worker.start()
        eventually(log.exists, "the command's log file", 10, 0.01)
        with pytest.raises(UnavailableError) as raised:
            on_b.run(slow, TURN)
        assert raised.value.reason == "call_running_elsewhere"
        assert raised.value.code is grpc.StatusCode.UNAVAILABLE
        gate.touch()
        worker.join(30)
        # Finished on A: B answers the stored result, and nothing ran again.
        assert on_b.run(slow, TURN) == first[0]
        assert log.read_text() == "run\n"
