"""Planted secrets never reach a log line or an audit record; the JSON log carries ids (issue 19)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from shellgate.v1 import router_pb2, router_pb2_grpc

from tests.integration.shared_support import free_port, seal_key_file, wait_listening
from tests.router_harness import function_item, turn
from tests.waiting import eventually

TOKEN = "tok-planted-8d2c41f07a"
WRONG_TOKEN = "tok-wrong-5e9a13b2c4"
REDIS_PASSWORD = "redispw-planted-77c0d1"
ENV_SECRET = "envsecret-planted-3b6f90"
METRICS_TOKEN = "metrics-planted-1a2b3c4d"
PLANTED = (TOKEN, WRONG_TOKEN, REDIS_PASSWORD, ENV_SECRET, METRICS_TOKEN)


@contextlib.contextmanager
def redis_with_password() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
         "127.0.0.1", "--save", "", "--appendonly", "no", "--requirepass", REDIS_PASSWORD],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(proc, port, "redis-server")
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_no_planted_secret_in_any_log_line_or_audit_record(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "base.rules").write_text('prefix_rule(pattern=["rm"], decision="forbidden")\n')
    (tmp_path / "tokens").write_text(f"alice {TOKEN}\n")
    (tmp_path / "metrics.token").write_text(METRICS_TOKEN + "\n")
    audit = tmp_path / "audit.log"
    stderr = tmp_path / "router.log"
    with redis_with_password() as redis_port:
        (tmp_path / "redis.url").write_text(f"redis://:{REDIS_PASSWORD}@127.0.0.1:{redis_port}/0\n")
        (tmp_path / "router.toml").write_text(
            f'token_file = "{tmp_path}/tokens"\nredis_url_file = "{tmp_path}/redis.url"\n'
            f'shared_state_key_file = "{seal_key_file(tmp_path)}"\n'
            f'rules_dirs = ["{rules}"]\naudit_log = "{audit}"\nlocal_cwd = "{tmp_path}"\n'
            f'metrics_listen = "127.0.0.1:{free_port()}"\n'
            f'metrics_token_file = "{tmp_path}/metrics.token"\n'
            "[limits]\nshutdown_grace_ms = 500\n"
        )
        env = {**os.environ, "DEPLOY_API_TOKEN": ENV_SECRET, "PLAIN_SETTING": ENV_SECRET}
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--config",
                 str(tmp_path / "router.toml"), "--listen", "127.0.0.1:0", "--print-port",
                 "--log-format", "json", "--log-level", "DEBUG"],
                stdout=subprocess.PIPE, stderr=err, env=env,
            )  # fmt: skip
            try:
                assert proc.stdout is not None
                port = int(proc.stdout.readline())
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    stub = router_pb2_grpc.ToolRouterServiceStub(channel)
                    good = [("authorization", f"Bearer {TOKEN}")]
                    for call_id, cmd in (("c1", "echo hi"), ("c2", "rm -rf x")):
                        request = router_pb2.ExecuteRequest(
                            thread_id="t1", turn=turn(),
                            item=function_item("exec_command", {"cmd": cmd, "login": False}, call_id),
                        )  # fmt: skip
                        events = list(stub.Execute(request, timeout=30, metadata=good))
                        assert events[-1].WhichOneof("event") == "completed"
                    with pytest.raises(grpc.RpcError):
                        list(stub.Execute(request, timeout=30,
                                          metadata=[("authorization", f"Bearer {WRONG_TOKEN}")]))  # fmt: skip
                    (rules / "broken.rules").write_text("prefix_rule(\n")
                    proc.send_signal(signal.SIGHUP)
                    eventually(
                        lambda: "rules reload failed" in stderr.read_text(),
                        lambda: f"the reload failure logged; stderr: {stderr.read_text()}",
                        10,
                    )
                    info = stub.GetServerInfo(router_pb2.GetServerInfoRequest(), metadata=good)
                    assert "broken.rules" in info.last_rules_error.rendered
                    assert abs(info.last_rules_error.at_ms / 1000 - time.time()) < 60
            finally:
                proc.terminate()
                code = proc.wait(20)
                if proc.stdout is not None:
                    proc.stdout.close()
            assert code == 0
    log_text = stderr.read_text()
    audit_text = audit.read_text()
    for value in PLANTED:
        assert value not in log_text, value
        assert value not in audit_text, value
    records = [json.loads(line) for line in log_text.splitlines()[1:] if line.startswith("{")]
    assert records and all({"time", "level", "component", "logger", "message"} <= r.keys()
                           for r in records)  # fmt: skip
    summaries = [r for r in records if r["message"].startswith("call completed")]
    assert {(r["thread"], r["call"]) for r in summaries} == {("t1", "c1"), ("t1", "c2")}
    assert any("outcome=forbidden" in r["message"] for r in summaries)
    failed = [r for r in records if r["message"].startswith("rules reload failed")]
    assert failed and failed[0]["level"] == "ERROR" and "broken.rules:" in failed[0]["message"]
    assert all(r["component"] == "router" for r in records)


def test_execserver_logs_json_without_its_tokens(tmp_path: Path) -> None:
    from shellgate.v1 import exec_pb2, exec_pb2_grpc

    from tests.execserver_harness import daemon_subprocess, start_request

    tokens = tmp_path / "tokens"
    tokens.write_text(f"router {TOKEN}\n")
    args = ["--token-file", str(tokens), "--log-format", "json", "--log-level", "DEBUG"]
    with daemon_subprocess(args) as daemon:
        with grpc.insecure_channel(daemon.target) as channel:
            stub = exec_pb2_grpc.ExecServiceStub(channel)
            good = [("authorization", f"Bearer {TOKEN}")]
            replies = list(
                stub.Start(start_request(["/bin/echo", "hi"]), timeout=30, metadata=good)
            )
            assert replies[0].event.WhichOneof("event") == "started"
            with pytest.raises(grpc.RpcError):
                stub.Read(exec_pb2.ReadRequest(process_id="x"), timeout=10,
                          metadata=[("authorization", f"Bearer {WRONG_TOKEN}")])  # fmt: skip
        daemon.proc.terminate()
        assert daemon.proc.stderr is not None
        _, err = daemon.proc.communicate(timeout=20)
    text = err.decode()
    assert TOKEN not in text and WRONG_TOKEN not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert any(r["message"].startswith("exec-server listening on") for r in records), text
    assert {r["component"] for r in records} == {"execserver"}
    assert all(r["level"] in ("DEBUG", "INFO", "WARNING", "ERROR") and r["time"].endswith("Z")
               for r in records)  # fmt: skip
