"""The client libraries against a canned fake ToolRouterService over a real gRPC server."""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path

import grpc
import pytest
from shellgate.client import (
    ApprovalKind,
    ApprovalRequired,
    AsyncClient,
    Client,
    ClientOptions,
    Completed,
    DeadlineExceededError,
    Decision,
    NotFoundError,
    Output,
    ProjectionEvent,
    Started,
    Termination,
    TlsOptions,
    UnauthenticatedError,
    UnavailableError,
    abort_output_item,
    call_identity,
    exec_command_item,
    shell_command_item,
    turn_context,
)
from shellgate.v1 import common_pb2, router_pb2

from tests.certs import make_tls
from tests.integration.test_client_support import SLEEP_ABORT, TOKEN, fake_router, item_fields
from tests.waiting import eventually, eventually_async


def test_sync_unary_calls_round_trip() -> None:
    with fake_router() as fake, Client(fake.target, thread_id="t-1") as client:
        tools = client.list_tools(turn_context(shell_tool_type="unified_exec"))
        assert [(t.name, t.hidden) for t in tools] == [("exec_command", False), ("shell_command", True)]
        assert tools[0].spec == {"type": "function", "name": "exec_command"}
        name, request = fake.state.requests[-1]
        assert name == "ListTools" and request.thread_id == "t-1"
        assert request.turn.shell_tool_type == common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC

        projection = client.project(exec_command_item("ls", call_id="c1", workdir="/w"))
        assert projection.call_id == "c1" and projection.tool_name == "exec_command"
        assert list(projection.shell.elements[0].command.handler_argv) == ["/bin/bash", "-lc", "ls"]
        sent = fake.state.requests[-1][1].item
        assert item_fields(sent) == ("c1", "exec_command", {"cmd": "ls", "workdir": "/w"})

        envs = client.list_environments(refresh=True)
        assert fake.state.requests[-1][1].refresh is True
        assert [(e.environment_id, e.remote, e.reachable) for e in envs] == [
            ("local", False, True), ("far", True, False)]
        assert envs[0].info is not None and envs[0].info.os == "linux" and envs[1].info is None
        assert envs[1].last_error == "connection refused"

        sessions = client.list_sessions()
        assert sessions[0].session_id == 7 and sessions[0].argv == ("bash", "-lc", "top")
        assert sessions[0].exit_code is None and sessions[1].exit_code == 0
        assert client.terminate_session(7) is True
        with pytest.raises(NotFoundError) as err:
            client.terminate_session(99)
        assert err.value.code == grpc.StatusCode.NOT_FOUND and "99" in err.value.details

        info = client.server_info()
        assert (info.version, info.instance_id, info.rules_files) == ("9.9.9", "inst-1", ("/r/default.rules",))
        assert info.last_rules_error is not None and info.last_rules_error.rendered == "r:1:1 bad"

        ended = client.end_thread()
        assert (ended.terminated_sessions, ended.dropped_pending_approvals) == (2, 1)
        assert fake.state.requests[-1][1].thread_id == "t-1"


def test_sync_execute_yields_typed_events_in_order() -> None:
    with fake_router() as fake, Client(fake.target) as client:
        item = shell_command_item("echo hi", call_id="c2", timeout_ms=500)
        events = list(client.execute(item, thread_id="t-x"))
        assert [type(e) for e in events] == [ProjectionEvent, Started, Output, Output, Completed]
        started = events[1]
        assert isinstance(started, Started) and started.pid == 4242 and started.session_id is None
        outputs = [e for e in events if isinstance(e, Output)]
        assert [(o.stream, o.seq, o.data) for o in outputs] == [("stdout", 1, b"hel"), ("stdout", 2, b"lo\n")]
        done = events[-1]
        assert isinstance(done, Completed)
        assert done.termination is Termination.EXITED and done.exit_code == 0
        assert done.output_item == {"type": "function_call_output", "call_id": "c2",
                                    "output": "Exit code: 0\nOutput:\nhello\n"}
        assert done.original_token_count == 3 and done.session_id is None
        assert done.raw is not None and done.raw.WhichOneof("event") == "completed"
        assert fake.state.requests[-1][1].thread_id == "t-x"


def test_async_approval_round_trip_remembers_the_thread() -> None:
    async def main(target: str) -> None:
        async with AsyncClient(target) as client:
            item = exec_command_item("ask me", call_id="c3")
            events = [e async for e in client.execute(item, thread_id="t-appr")]
            assert [type(e) for e in events] == [ProjectionEvent, ApprovalRequired]
            ask = events[-1]
            assert isinstance(ask, ApprovalRequired)
            assert ask.kind is ApprovalKind.EXEC_POLICY and ask.proposed_amendment == ("ask",)
            assert ask.argv == ("/bin/bash", "-lc", "ask me") and ask.reason == "needs a look"
            assert Decision.APPROVED_FOR_SESSION not in ask.available_decisions
            # No thread id: the client remembers which thread the approval belongs to.
            rest = [e async for e in client.resume(ask.approval_id, "approved")]
            assert [type(e) for e in rest] == [Started, Output, Completed]
            done = rest[-1]
            assert isinstance(done, Completed) and done.output_text.endswith("approved\n")
            # The id is spent: resuming again is NOT_FOUND.
            with pytest.raises(NotFoundError):
                async for _ in client.resume(ask.approval_id, Decision.DENIED, "t-appr"):
                    pass

            async def deny(event: ApprovalRequired) -> Decision:
                assert event.call_id == "c4"
                return Decision.DENIED

            seen: list[object] = []
            done = await client.run(exec_command_item("ask again", call_id="c4"),
                                    approver=deny, on_event=seen.append)
            assert done.termination is Termination.REJECTED
            assert done.output_text == "exec command rejected by user"
            assert [type(e) for e in seen] == [ProjectionEvent, ApprovalRequired, Completed]

    with fake_router() as fake:
        asyncio.run(main(fake.target))
        resumes = [r for n, r in fake.state.requests if n == "Execute" and r.HasField("resume")]
        assert resumes[0].thread_id == "t-appr"
        assert resumes[0].resume.decision == router_pb2.APPROVAL_DECISION_APPROVED


def test_sync_run_without_approver_denies() -> None:
    with fake_router() as fake, Client(fake.target) as client:
        done = client.run(exec_command_item("ask", call_id="c5"))
        assert done.termination is Termination.REJECTED


def test_interrupt_ends_the_stream_with_the_abort_output() -> None:
    async def main(target: str) -> None:
        async with AsyncClient(target) as client:
            events: list[object] = []

            async def consume() -> None:
                async for event in client.execute(exec_command_item("sleep 30", call_id="c6")):
                    events.append(event)

            task = asyncio.create_task(consume())
            await eventually_async(
                lambda: any(isinstance(e, Output) for e in events), "the first output", 10, 0.02
            )
            await client.interrupt("c6")
            await asyncio.wait_for(task, 10)
            done = events[-1]
            assert isinstance(done, Completed) and done.termination is Termination.CANCELLED
            assert done.output_text == SLEEP_ABORT
            with pytest.raises(NotFoundError):
                await client.interrupt("no-such-call")

    with fake_router() as fake:
        asyncio.run(main(fake.target))


def test_leaving_the_stream_cancels_the_rpc_and_the_helper_pairs_the_call() -> None:
    item = exec_command_item("sleep 30", call_id="c7")

    async def main(target: str) -> Completed:
        async with AsyncClient(target) as client:
            async for event in client.execute(item):
                if isinstance(event, Output):
                    break  # the harness gives up on the call
        identity = call_identity(item)
        assert identity is not None
        return abort_output_item(
            identity.call_id, identity.tool_name, datetime.timedelta(seconds=1.25)
        )

    with fake_router() as fake:
        done = asyncio.run(main(fake.target))
        eventually(lambda: fake.call(lambda: list(fake.state.cancelled_calls)), "the cancel", 5)
        assert fake.call(lambda: list(fake.state.cancelled_calls)) == ["c7"]
    assert json.loads(done.output_item_json) == {
        "type": "function_call_output", "call_id": "c7", "output": "aborted by user after 1.2s"}
    assert done.termination is Termination.CANCELLED and not done.success


def test_sync_stream_cancelled_when_the_generator_is_closed() -> None:
    with fake_router() as fake, Client(fake.target) as client:
        stream = client.execute(exec_command_item("sleep 30", call_id="c8"))
        for event in stream:
            if isinstance(event, Output):
                break
        stream.close()  # type: ignore[attr-defined]
        eventually(lambda: fake.call(lambda: list(fake.state.cancelled_calls)), "the cancel", 5)
        assert fake.call(lambda: list(fake.state.cancelled_calls)) == ["c8"]


def test_bearer_token_is_sent_on_every_call() -> None:
    with fake_router() as fake:
        fake.state.require_token = True
        with Client(fake.target) as anonymous, pytest.raises(UnauthenticatedError):
            anonymous.server_info()
        with Client(fake.target, token=TOKEN) as client:
            client.server_info()
            list(client.execute(exec_command_item("echo")))
        assert all(m.get("authorization") == f"Bearer {TOKEN}" for m in fake.state.metadata[1:])

        async def main() -> None:
            async with AsyncClient(fake.target, token=TOKEN) as client:
                await client.list_tools()
                assert [type(e) async for e in client.execute(exec_command_item("echo"))][-1] is Completed

        asyncio.run(main())
        assert fake.state.metadata[-1]["authorization"] == f"Bearer {TOKEN}"


def test_unary_calls_have_a_deadline() -> None:
    with fake_router() as fake:
        fake.state.slow_s = 2.0
        options = ClientOptions(target=fake.target, unary_timeout_s=0.3)
        with Client(options=options) as client, pytest.raises(DeadlineExceededError):
            client.server_info()

        async def main() -> None:
            async with AsyncClient(options=options) as client:
                with pytest.raises(DeadlineExceededError):
                    await client.list_sessions()

        asyncio.run(main())


def test_unreachable_router_is_unavailable_fast() -> None:
    options = ClientOptions(target="127.0.0.1:1", unary_timeout_s=5)
    with Client(options=options) as client, pytest.raises(UnavailableError):
        client.list_environments()


def test_tls_and_mtls(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    server_creds = grpc.ssl_server_credentials(
        [(tls.read("server_key"), tls.read("server_cert"))],
        root_certificates=tls.read("ca_cert"),
        require_client_auth=True,
    )
    with fake_router(server_creds) as fake:
        mtls = TlsOptions(ca_file=tls.ca_cert, cert_file=tls.client_cert, key_file=tls.client_key)
        with Client(fake.target, tls=mtls) as client:
            assert client.server_info().version == "9.9.9"
        # A client without its certificate is refused by the handshake.
        anonymous = Client(fake.target, tls=TlsOptions(ca_file=tls.ca_cert))
        with anonymous, pytest.raises(UnavailableError):
            anonymous.server_info()

        async def main() -> None:
            async with AsyncClient(fake.target, tls=mtls) as client:
                assert (await client.server_info()).instance_id == "inst-1"

        asyncio.run(main())
    with pytest.raises(ValueError, match="both"):
        TlsOptions(ca_file=tls.ca_cert, cert_file=tls.client_cert).credentials()
