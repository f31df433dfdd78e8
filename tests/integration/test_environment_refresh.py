"""ListEnvironments(refresh=true) never disturbs live remote work, and probes only what the
caller may see (issue 13 finding 5)."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import completed, function_item, router_subprocess, turn


def _router_config(tmp_path: Path, daemon_target: str, tokens: bool = False) -> Path:
    config = tmp_path / "router.toml"
    # No background probe during the test: what is reported comes from the callers' refreshes.
    text = f'[[environments]]\nid = "box"\ntarget = "{daemon_target}"\ninsecure = true\n'
    if tokens:
        token_file = tmp_path / "tokens"
        token_file.write_text("alice tok-alice\nbob tok-bob\n")
        text = f'token_file = "{token_file}"\n[client_environments]\nbob = ["local"]\n' + text
    config.write_text("environment_probe_interval_ms = 0\n" + text)
    return config


def test_refresh_during_remote_calls_changes_nothing_for_them(tmp_path: Path) -> None:
    with (
        daemon_subprocess() as daemon,
        router_subprocess(["--config", str(_router_config(tmp_path, daemon.target))]) as (
            _proc,
            port,
        ),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        box = turn(environment_id="box")
        classic: list[router_pb2.ExecuteResponse] = []

        def run_classic() -> None:
            # In flight on the daemon for 2 s: one Start stream the whole time.
            item = function_item(
                "exec_command", {"cmd": "sleep 2; echo finished", "yield_time_ms": 10_000}, "a"
            )
            request = router_pb2.ExecuteRequest(thread_id="t", turn=box, item=item)
            classic.extend(stub.Execute(request, timeout=60))

        worker = threading.Thread(target=run_classic)
        worker.start()
        item = function_item(
            "exec_command", {"cmd": "sleep 1.5; echo later", "yield_time_ms": 250}, "b"
        )
        yielded = completed(
            list(stub.Execute(router_pb2.ExecuteRequest(thread_id="t", turn=box, item=item)))
        )
        assert yielded.HasField("session_id"), yielded.output_text
        for _ in range(10):
            listed = stub.ListEnvironments(
                router_pb2.ListEnvironmentsRequest(refresh=True), timeout=30
            )
            assert {e.environment_id: e.reachable for e in listed.environments}["box"]
        worker.join(60)
        done = completed(classic)
        assert done.exit_code == 0 and "finished" in done.output_text, done.output_text
        poll = function_item(
            "write_stdin", {"session_id": yielded.session_id, "yield_time_ms": 5000}, "c"
        )
        polled = completed(
            list(stub.Execute(router_pb2.ExecuteRequest(thread_id="t", turn=box, item=poll)))
        )
        assert "later" in polled.output_text and "exited with code 0" in polled.output_text


def test_refresh_shows_and_probes_only_the_callers_environments(tmp_path: Path) -> None:
    with (
        daemon_subprocess() as daemon,
        router_subprocess(
            ["--config", str(_router_config(tmp_path, daemon.target, tokens=True))]
        ) as (_proc, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        request = router_pb2.ListEnvironmentsRequest(refresh=True)
        bob = stub.ListEnvironments(request, metadata=(("authorization", "Bearer tok-bob"),))
        assert [e.environment_id for e in bob.environments] == ["local"]
        # Bob's refresh did not connect to the daemon he may not use: alice, who may, sees
        # it not yet probed (no info) until she refreshes herself.
        alice_auth = (("authorization", "Bearer tok-alice"),)
        plain = stub.ListEnvironments(router_pb2.ListEnvironmentsRequest(), metadata=alice_auth)
        box = {e.environment_id: e for e in plain.environments}["box"]
        assert not box.reachable
        refreshed = stub.ListEnvironments(request, metadata=alice_auth)
        assert {e.environment_id: e.reachable for e in refreshed.environments}["box"]
