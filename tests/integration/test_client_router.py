"""The client libraries against a real `shellgate serve` process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from shellgate.client import (
    ApprovalRequired,
    AsyncClient,
    Client,
    Completed,
    Decision,
    InvalidArgumentError,
    NotFoundError,
    Output,
    ProjectionEvent,
    Started,
    Termination,
    exec_command_item,
    new_thread_id,
    shell_command_item,
    turn_context,
)

from tests.integration.test_client_support import RouterProcess, router_process
from tests.waiting import eventually, eventually_async

# Sandboxed default profile: what a harness gets without asking for more.
UNTRUSTED = turn_context(approval_policy="untrusted")


@pytest.fixture(scope="module")
def router() -> Iterator[RouterProcess]:
    """One router for the module (started without the per-test orphan marker)."""
    with router_process() as process:
        yield process


@pytest.fixture
def client(router: RouterProcess) -> Iterator[Client]:
    """A blocking client on a fresh thread; the thread is ended afterwards."""
    with Client(router.target, thread_id=new_thread_id()) as c:
        try:
            yield c
        finally:
            # Unknown when the test created no thread state (or already ended it).
            with contextlib.suppress(NotFoundError):
                c.end_thread()


def _stdout(events: list[object]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, Output))


def _pid_dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_tools_environments_and_server_info(client: Client) -> None:
    tools = {t.name: t for t in client.list_tools(turn_context(shell_tool_type="unified_exec"))}
    assert "exec_command" in tools and "write_stdin" in tools
    assert tools["exec_command"].spec["name"] == "exec_command"
    classic = client.list_tools(
        turn_context(shell_tool_type="shell_command", features={"unified_exec": False})
    )
    assert "shell_command" in [t.name for t in classic if not t.hidden]
    envs = client.list_environments()
    assert envs[0].environment_id == "local" and not envs[0].remote and envs[0].reachable
    info = client.server_info()
    assert info.version and info.instance_id
    assert [e.environment_id for e in info.environments] == ["local"]


def test_project_is_the_same_from_both_clients(router: RouterProcess, client: Client) -> None:
    item = exec_command_item("git status && rg -n TODO src", call_id="p1", workdir="/tmp")
    projection = client.project(item)
    assert projection.call_id == "p1" and projection.tool_name == "exec_command"
    command = projection.shell.elements[0].command
    assert list(command.handler_argv)[-1] == "git status && rg -n TODO src"
    assert [list(c.words) for c in command.policy.commands] == [
        ["git", "status"],
        ["rg", "-n", "TODO", "src"],
    ]

    async def main() -> object:
        async with AsyncClient(router.target) as aclient:
            return await aclient.project(item, thread_id=client.thread_id)

    assert asyncio.run(main()) == projection
    bad = client.project(
        '{"type":"function_call","name":"exec_command","arguments":"{","call_id":"p2"}'
    )
    assert bad.WhichOneof("outcome") == "tool_error"
    assert bad.tool_error.text.startswith("failed to parse function arguments")


def test_execute_streams_output_and_pairs_the_call(client: Client) -> None:
    events = list(client.execute(shell_command_item("printf 'a\\nb\\n'; exit 3", call_id="e1")))
    assert isinstance(events[0], ProjectionEvent) and isinstance(events[1], Started)
    assert b"a\nb\n" in _stdout(events)
    done = events[-1]
    assert isinstance(done, Completed)
    assert done.exit_code == 3 and done.termination is Termination.EXITED
    assert done.output_item is not None and done.output_item["call_id"] == "e1"
    assert done.output_item["output"] == done.output_text
    assert done.output_text.startswith("Exit code: 3\n")


def test_approval_round_trip(client: Client, tmp_path: Path) -> None:
    target = tmp_path / "made"
    events = list(client.execute(shell_command_item(f"touch {target}", call_id="a1"), UNTRUSTED))
    ask = events[-1]
    assert isinstance(ask, ApprovalRequired) and ask.call_id == "a1"
    assert ask.argv[-1] == f"touch {target}" and len(ask.approval_key_digest) == 64
    assert Decision.APPROVED in ask.available_decisions and not target.exists()
    rest = list(client.resume(ask.approval_id, Decision.APPROVED))
    assert not any(isinstance(e, ProjectionEvent) for e in rest)
    done = rest[-1]
    assert isinstance(done, Completed) and done.exit_code == 0, done
    assert target.exists()
    with pytest.raises(NotFoundError):
        list(client.resume(ask.approval_id, Decision.APPROVED))

    denied = client.run(
        shell_command_item(f"rm {target}", call_id="a2"),
        UNTRUSTED,
        approver=lambda _: Decision.DENIED,
    )
    assert denied.output_text == "exec command rejected by user"
    assert denied.termination is Termination.REJECTED and target.exists()
    aborted = client.run(
        exec_command_item(f"rm {target}", call_id="a3"), UNTRUSTED, approver=lambda _: "abort"
    )
    assert aborted.termination is Termination.CANCELLED
    assert aborted.output_text.startswith("aborted by user after ")
    assert json.loads(aborted.output_item_json)["call_id"] == "a3"


def test_interrupt_kills_a_classic_command(router: RouterProcess) -> None:
    async def main() -> tuple[Completed, int]:
        async with AsyncClient(router.target) as aclient:
            events: list[object] = []

            async def consume() -> None:
                item = shell_command_item("echo go; sleep 30", call_id="i1", timeout_ms=60_000)
                async for event in aclient.execute(item):
                    events.append(event)

            task = asyncio.create_task(consume())
            with contextlib.suppress(AssertionError):  # interrupted either way
                await eventually_async(lambda: _stdout(events), "the command's output", 20)
            await aclient.interrupt("i1")
            await asyncio.wait_for(task, 15)
            await aclient.end_thread()
            started = next(e for e in events if isinstance(e, Started))
            assert isinstance(events[-1], Completed) and started.pid is not None
            return events[-1], started.pid

    done, pid = asyncio.run(main())
    assert done.termination is Termination.CANCELLED
    assert done.output_text.startswith("Wall time: ") and done.output_text.endswith(
        " seconds\naborted by user"
    )
    eventually(lambda: _pid_dead(pid), "the command's process gone")


def test_cancelling_the_stream_kills_the_command(client: Client) -> None:
    stream = client.execute(
        shell_command_item("echo go; sleep 30", call_id="k1", timeout_ms=60_000)
    )
    pid = None
    for event in stream:
        if isinstance(event, Started):
            pid = event.pid
        if isinstance(event, Output):
            break
    stream.close()  # type: ignore[attr-defined]
    assert pid is not None
    eventually(lambda: _pid_dead(pid), "the command's process gone")
    # The router forgets the call once its handler has unwound, which may trail the kill.

    def forgotten() -> bool:
        try:
            client.interrupt("k1")
        except NotFoundError:
            return True
        return False

    eventually(forgotten, "the cancelled call no longer registered", 5)


def test_unified_exec_sessions(client: Client) -> None:
    item = exec_command_item("echo up; sleep 30", call_id="u1", yield_time_ms=300)
    done = list(client.execute(item))[-1]
    assert isinstance(done, Completed) and done.termination is Termination.YIELDED
    assert done.session_id is not None
    sessions = client.list_sessions()
    assert [(s.session_id, s.call_id, s.running) for s in sessions] == [
        (done.session_id, "u1", True)
    ]
    assert client.terminate_session(done.session_id) is True
    with pytest.raises(NotFoundError):
        client.terminate_session(999_999)
    ended = client.end_thread()
    assert ended.dropped_pending_approvals == 0


def test_request_errors_are_typed(client: Client) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        client.project(exec_command_item("ls"), thread_id="bad thread id!")
    assert "thread_id" in err.value.details and err.value.reason == "invalid_argument"
    with pytest.raises(NotFoundError) as missing:
        list(client.resume("00000000-0000-4000-8000-000000000000", Decision.APPROVED))
    # Two NOT_FOUNDs a harness tells apart by the stable reason, not by the message text.
    assert missing.value.reason == "unknown_approval"
    with pytest.raises(NotFoundError) as missing:
        client.terminate_session(999_999)
    assert missing.value.reason == "unknown_session" and missing.value.errno is None


def test_turn_file_json_is_accepted(client: Client, tmp_path: Path) -> None:
    # The protobuf JSON mapping of a turn (what `shellgate call --turn` reads) reaches the router.
    text = json_format.MessageToJson(turn_context(cwd=str(tmp_path)))
    projection = client.project(exec_command_item("pwd"), json.loads(text))
    assert projection.shell.elements[0].command.cwd == str(tmp_path)
    assert os.path.isdir(tmp_path)
