"""The client's channel settings over a real gRPC server: idempotent RPCs are retried on
UNAVAILABLE, RPCs that act are not, the service config is valid, wait_until_ready waits."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from shellgate.client import (
    AsyncClient,
    Client,
    ClientOptions,
    DeadlineExceededError,
    UnavailableError,
    exec_command_item,
)
from shellgate.client.options import IDEMPOTENT_METHODS

from tests.integration.test_client_support import fake_router
from tests.router_harness import router_subprocess


def test_idempotent_rpcs_retry_on_unavailable() -> None:
    with fake_router() as fake, Client(fake.target) as client:
        fake.state.unavailable_first = 2
        assert [t.name for t in client.list_tools()] == ["exec_command", "shell_command"]
        assert [name for name, _ in fake.state.requests] == ["ListTools"] * 3


def test_retries_stop_at_the_configured_attempts() -> None:
    with fake_router() as fake:
        options = ClientOptions(target=fake.target, retry_attempts=1)
        with Client(options=options) as client, pytest.raises(UnavailableError):
            fake.state.unavailable_first = 1
            client.server_info()
        assert [name for name, _ in fake.state.requests] == ["GetServerInfo"]


def test_execute_and_acting_rpcs_are_not_retried() -> None:
    assert "Execute" not in IDEMPOTENT_METHODS and "Interrupt" not in IDEMPOTENT_METHODS
    with fake_router() as fake, Client(fake.target) as client:
        fake.state.unavailable_first = 1
        with pytest.raises(UnavailableError):
            list(client.execute(exec_command_item("echo hi", call_id="c1")))
        fake.state.unavailable_first = 1
        with pytest.raises(UnavailableError):
            client.end_thread()
        assert [name for name, _ in fake.state.requests] == ["Execute", "EndThread"]


def test_keepalive_options_reach_a_real_router() -> None:
    # The router accepts the channel (service config parses, keepalive within its policy).
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port), \
            Client(f"127.0.0.1:{port}") as client:
        assert client.wait_until_ready(timeout_s=10).version
        assert client.list_tools()


def test_wait_until_ready_waits_instead_of_failing_fast() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Client(f"127.0.0.1:{port}") as client:
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            client.wait_until_ready(timeout_s=1.0)
        # It waited (a plain call fails UNAVAILABLE in ~10 ms): half the 1 s timeout proves it
        # without relying on how precisely the deadline fires.
        assert time.monotonic() - began >= 0.5


def test_async_wait_until_ready() -> None:
    async def main() -> str:
        async with AsyncClient(fake.target) as client:
            return (await client.wait_until_ready(timeout_s=5)).version

    with fake_router() as fake:
        assert asyncio.run(main()) == "9.9.9"


def test_a_coalescing_client_hands_out_the_same_events_from_fewer_messages() -> None:
    # A real router: ClientOptions.coalesce_ms asks for batches, the client unpacks them.
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        kinds = {}
        for window in (0, 1000):
            options = ClientOptions(target=f"127.0.0.1:{port}", coalesce_ms=window)
            with Client(options=options) as client:
                item = exec_command_item("echo hi", call_id=f"co-{window}")
                events = list(client.execute(item, thread_id=f"t-co-{window}"))
            kinds[window] = [type(e).__name__ for e in events]
            assert events[-1].output_text.endswith("hi\n")  # type: ignore[union-attr]
        assert kinds[1000] == kinds[0]
        assert kinds[0][0] == "ProjectionEvent" and kinds[0][-1] == "Completed"
