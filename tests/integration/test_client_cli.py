"""`shellgate call` end to end: exit codes, live output, JSON events, approvals, Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import grpc
import pytest
from google.protobuf import json_format
from shellgate.client import Completed, Termination, turn_context
from shellgate.client.call_cli import exit_code_for
from shellgate.v1 import router_pb2

from tests.certs import make_tls
from tests.integration.test_client_support import (
    TOKEN,
    RouterProcess,
    fake_router,
    router_process,
)
from tests.waiting import eventually

CALL = [sys.executable, "-m", "shellgate.router.cli.main", "call"]


@pytest.fixture(scope="module")
def router() -> Iterator[RouterProcess]:
    """One real router for the module."""
    with router_process() as process:
        yield process


def call(target: str, *args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `shellgate call --target … args` to completion."""
    return subprocess.run([*CALL, "--target", target, *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _completed(**fields: object) -> Completed:
    base: dict[str, object] = dict(output_item_json="", output_text="", success=True,
                                   exit_code=None, session_id=None, wall_time_ms=0,
                                   original_token_count=None, truncated=False,
                                   termination=Termination.EXITED, model_warnings=())
    return Completed(**(base | fields))  # type: ignore[arg-type]


def test_exit_code_rules() -> None:
    assert exit_code_for(_completed(exit_code=7)) == 7
    assert exit_code_for(_completed(exit_code=0)) == 0
    assert exit_code_for(_completed(exit_code=-1, termination=Termination.ENVIRONMENT_LOST)) == 1
    assert exit_code_for(_completed(exit_code=124, termination=Termination.TIMED_OUT)) == 124
    assert exit_code_for(_completed(termination=Termination.CANCELLED, success=False)) == 130
    assert exit_code_for(_completed(termination=Termination.YIELDED)) == 0
    for reason in (Termination.REJECTED, Termination.FORBIDDEN, Termination.TOOL_ERROR):
        assert exit_code_for(_completed(termination=reason, success=False)) == 1
    assert exit_code_for(_completed(termination=Termination.UNSPECIFIED)) == 0
    assert exit_code_for(_completed(termination=Termination.NO_TOOL_CALL, success=False)) == 3


def test_malformed_items_say_why_on_stderr(router: RouterProcess) -> None:
    cases = {
        "{bad json": "not a tool call, nothing ran: item is not valid JSON: ",
        json.dumps({"type": "function_call", "name": "shell_command", "call_id": "b1",
                    "arguments": {"command": "echo"}}):
            "not a tool call, nothing ran: function_call: arguments must be a string, not an object",
        json.dumps({"type": "function_call", "name": "shell_command", "arguments": "{}"}):
            "not a tool call, nothing ran: function_call: call_id is missing",
    }  # fmt: skip
    for item, reason in cases.items():
        proc = call(router.target, "--item", item)
        assert proc.returncode == 3 and proc.stdout == "", (proc.stdout, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"shellgate call: {reason}"), lines
    unknown = json.dumps({"type": "function_call", "name": "nope", "call_id": "b2", "arguments": "{}"})
    proc = call(router.target, "--item", unknown)
    assert proc.returncode == 1 and proc.stdout == "unsupported call: nope\n"
    assert proc.stderr == "shellgate call: tool error, nothing ran: unsupported call: nope\n"


def test_cmd_streams_output_and_exits_with_the_command_code(router: RouterProcess) -> None:
    proc = call(router.target, "--tool", "shell_command", "--cmd", "printf 'live\\n'; exit 7")
    assert proc.returncode == 7, proc.stderr
    # The live bytes first, then the model-facing text.
    live, _, final = proc.stdout.partition("Exit code: 7\n")
    assert "live\n" in live and final.startswith("Wall time: ") and "Output:\nlive\n" in final
    proc = call(router.target, "--cmd", "echo fine", "--yield-ms", "5000")
    assert proc.returncode == 0, proc.stderr
    assert "Process exited with code 0" in proc.stdout


def test_json_events_and_item_from_stdin(router: RouterProcess) -> None:
    item = {"type": "function_call", "name": "shell_command", "call_id": "j1",
            "arguments": json.dumps({"command": "echo json"})}
    proc = call(router.target, "--item", "-", "--json", stdin=json.dumps(item))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert list(lines[0]) == ["projection"] and lines[0]["projection"]["call_id"] == "j1"
    assert list(lines[-1]) == ["completed"]
    output_item = json.loads(lines[-1]["completed"]["output_item_json"])
    assert output_item["call_id"] == "j1" and output_item["type"] == "function_call_output"
    assert any("output" in line for line in lines)


def test_tool_error_and_timeout_exit_codes(router: RouterProcess) -> None:
    bad = '{"type":"function_call","name":"shell_command","arguments":"{","call_id":"t1"}'
    proc = call(router.target, "--item", bad)
    assert proc.returncode == 1 and "failed to parse function arguments" in proc.stdout
    proc = call(router.target, "--tool", "shell_command", "--cmd", "sleep 5", "--timeout-ms", "300")
    assert proc.returncode == 124 and "command timed out after" in proc.stdout


def test_approvals(router: RouterProcess, tmp_path: Path) -> None:
    turn = tmp_path / "turn.json"
    turn.write_text(json_format.MessageToJson(turn_context(approval_policy="untrusted")))
    made = tmp_path / "made"
    args = ["--tool", "shell_command", "--cmd", f"touch {made}", "--turn", str(turn)]
    proc = call(router.target, *args)  # stdin is not a terminal: ask → deny
    assert proc.returncode == 1 and "not interactive" in proc.stderr
    assert proc.stdout.strip() == "exec command rejected by user" and not made.exists()
    proc = call(router.target, *args, "--approve", "no")
    assert proc.returncode == 1 and not made.exists()
    proc = call(router.target, *args, "--approve", "yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert made.exists()


def _read_until(stream: IO[bytes], needle: bytes, timeout_s: float = 20) -> bytes:
    """What `stream` printed, read until it contains `needle` (bounded; EOF fails at once)."""
    seen = bytearray()

    def arrived() -> bool:
        ready, _, _ = select.select([stream], [], [], 0.2)  # the wait between reads
        if ready:
            chunk = os.read(stream.fileno(), 4096)
            assert chunk, f"EOF before {needle!r}: {bytes(seen)!r}"
            seen.extend(chunk)
        return needle in seen

    eventually(arrived, lambda: f"{needle!r} in {bytes(seen)!r}", timeout_s, 0)
    return bytes(seen)


def _wait_for(proc: subprocess.Popen[bytes], needle: bytes, timeout_s: float = 20) -> bytes:
    assert proc.stdout is not None
    return _read_until(proc.stdout, needle, timeout_s)


def _interrupt(target: str, cmd: str, needle: bytes, signals: int = 1) -> tuple[int, str]:
    proc = subprocess.Popen([*CALL, "--target", target, "--tool", "shell_command", "--cmd", cmd,
                             "--timeout-ms", "60000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = _wait_for(proc, needle)
        for _ in range(signals):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.3)
        out, _ = proc.communicate(timeout=20)
        return proc.returncode, (seen + out).decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_interrupts_through_the_router(router: RouterProcess) -> None:
    code, out = _interrupt(router.target, "echo started; sleep 30", b"started")
    assert code == 130
    assert out.rstrip().endswith("aborted by user") and "Wall time: " in out


def test_ctrl_c_without_router_interrupt_builds_the_abort_locally() -> None:
    with fake_router() as fake:
        code, out = _interrupt(fake.target, "hang", b"hanging")
        assert code == 130
        assert out.rstrip().endswith("aborted by user") and "Wall time: " in out
        eventually(lambda: fake.call(lambda: list(fake.state.cancelled_calls)), "the cancel", 5)
        assert len(fake.call(lambda: list(fake.state.cancelled_calls))) == 1


def test_token_file_and_rpc_errors(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"# router token\n{TOKEN}\n")
    with fake_router() as fake:
        fake.state.require_token = True
        proc = call(fake.target, "--cmd", "echo hi")
        assert proc.returncode == 2 and "UNAUTHENTICATED" in proc.stderr
        proc = call(fake.target, "--cmd", "echo hi", "--token-file", str(token_file))
        assert proc.returncode == 0, proc.stderr
        assert "hello\n" in proc.stdout
        assert fake.state.metadata[-1]["authorization"] == f"Bearer {TOKEN}"
        proc = call(fake.target, "--cmd", "echo hi", "--token", TOKEN, "--json")
        assert json.loads(proc.stdout.splitlines()[-1])["completed"]["exit_code"] == 0
    proc = call("127.0.0.1:1", "--cmd", "echo hi", "--rpc-timeout", "5")
    assert proc.returncode == 2 and "UNAVAILABLE" in proc.stderr
    proc = call("127.0.0.1:1", "--tool", "shell_command", "--cmd", "x", "--tty")
    assert proc.returncode == 2 and "exec_command only" in proc.stderr


def test_ask_prompts_on_a_terminal() -> None:
    with fake_router() as fake:
        primary, secondary = pty.openpty()
        proc = subprocess.Popen([*CALL, "--target", fake.target, "--cmd", "ask me"],
                                stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(secondary)
        try:
            assert proc.stderr is not None
            text = _read_until(proc.stderr, b"? ").decode()
            assert "approval required for call" in text and "needs a look" in text
            assert "[a] yes and add the rule" in text and "[s]" not in text
            os.write(primary, b"y\n")
            out, _ = proc.communicate(timeout=20)
        finally:
            os.close(primary)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0 and b"approved\n" in out
        resumes = [r for n, r in fake.state.requests if n == "Execute" and r.HasField("resume")]
        assert [r.resume.decision for r in resumes] == [router_pb2.APPROVAL_DECISION_APPROVED]


def test_mtls_options(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    creds = grpc.ssl_server_credentials([(tls.read("server_key"), tls.read("server_cert"))],
                                        root_certificates=tls.read("ca_cert"),
                                        require_client_auth=True)
    with fake_router(creds) as fake:
        proc = call(fake.target, "--cmd", "echo", "--tls-ca", tls.ca_cert,
                    "--tls-cert", tls.client_cert, "--tls-key", tls.client_key)
        assert proc.returncode == 0, proc.stderr
        proc = call(fake.target, "--cmd", "echo", "--tls-ca", tls.ca_cert, "--rpc-timeout", "5")
        assert proc.returncode == 2 and "UNAVAILABLE" in proc.stderr
