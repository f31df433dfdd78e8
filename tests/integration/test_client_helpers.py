"""Client helpers: the abort text against the router's, item and turn builders, layering."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.client import (
    Decision,
    abort_message,
    abort_output_item,
    call_identity,
    custom_tool_call_item,
    exec_command_item,
    shell_command_item,
    to_tool_call_item,
    to_turn_context,
    turn_context,
    turn_from_json,
)
from shellgate.client.events import Termination, completed_to_message, event_from_response
from shellgate.router.output.texts import abort_message as router_abort_message
from shellgate.v1 import common_pb2, router_pb2, shell_pb2

TOOLS = ["shell_command", "exec_command", "write_stdin", "apply_patch", "shell", "local_shell",
         "container.exec", "other"]


@settings(max_examples=400, deadline=None)
@given(
    tool=st.sampled_from(TOOLS),
    elapsed_ms=st.one_of(
        st.floats(min_value=0, max_value=1e9, allow_nan=False),
        st.integers(min_value=0, max_value=10**9).map(float),
        # Near the ties of one decimal: x.x5 seconds.
        st.integers(min_value=0, max_value=10**6).map(lambda n: n * 100.0 + 50.0),
    ),
)
def test_abort_message_matches_the_router(tool: str, elapsed_ms: float) -> None:
    assert abort_message(tool, elapsed_ms) == router_abort_message(tool, elapsed_ms)


@pytest.mark.parametrize(("tool", "ms", "text"), [
    ("shell_command", 1250.0, "Wall time: 1.2 seconds\naborted by user"),
    ("shell_command", 0.0, "Wall time: 0.0 seconds\naborted by user"),
    ("exec_command", 1350.0, "aborted by user after 1.4s"),
    ("apply_patch", 61_049.0, "aborted by user after 61.0s"),
    ("write_stdin", 99.0, "aborted by user after 0.1s"),
])
def test_abort_message_examples(tool: str, ms: float, text: str) -> None:
    assert abort_message(tool, ms) == text == router_abort_message(tool, ms)


def test_abort_output_item_kinds() -> None:
    shell = abort_output_item("c1", "shell_command", 2.0)
    assert json.loads(shell.output_item_json) == {
        "type": "function_call_output", "call_id": "c1",
        "output": "Wall time: 2.0 seconds\naborted by user"}
    assert shell.wall_time_ms == 2000 and shell.termination is Termination.CANCELLED
    patch = abort_output_item("c2", "apply_patch", datetime.timedelta(milliseconds=300))
    assert json.loads(patch.output_item_json)["type"] == "custom_tool_call_output"
    forced = abort_output_item("c3", "my_tool", 0.0, custom=True)
    assert json.loads(forced.output_item_json)["type"] == "custom_tool_call_output"
    # Same wire form a router sends: compact JSON, non-ASCII kept.
    assert abort_output_item("ç", "exec_command", 1).output_item_json == (
        '{"type":"function_call_output","call_id":"ç","output":"aborted by user after 1.0s"}')
    message = completed_to_message(shell)
    assert message.termination == router_pb2.TERMINATION_REASON_CANCELLED
    assert not message.HasField("exit_code")
    back = event_from_response(router_pb2.ExecuteResponse(completed=message))
    assert back == shell


def test_item_builders() -> None:
    item = exec_command_item("ls -la", call_id="c1", tty=True, yield_time_ms=500,
                             prefix_rule=["ls"])
    raw = json.loads(item.raw_json)
    assert raw["type"] == "function_call" and raw["call_id"] == "c1"
    assert json.loads(raw["arguments"]) == {"cmd": "ls -la", "tty": True, "yield_time_ms": 500,
                                            "prefix_rule": ["ls"]}
    shell = json.loads(shell_command_item("echo ü", timeout_ms=5).raw_json)
    assert shell["name"] == "shell_command" and shell["call_id"].startswith("call_")
    assert "ü" in shell["arguments"]
    patch = custom_tool_call_item("apply_patch", "*** Begin Patch\n*** End Patch", "p1")
    assert call_identity(patch) == call_identity({"type": "custom_tool_call", "name": "apply_patch",
                                                  "input": "", "call_id": "p1"})
    identity = call_identity(patch)
    assert identity is not None and identity.custom and identity.tool_name == "apply_patch"
    split = common_pb2.SplitToolCall(name="exec_command", call_id="s1", arguments="{}")
    assert to_tool_call_item(split).split.call_id == "s1"
    assert call_identity(split) is not None and not call_identity(split).custom  # type: ignore[union-attr]
    assert call_identity('{"type":"message","content":[]}') is None
    assert call_identity("not json") is None
    # Strings pass through byte-exact (the router decodes them itself).
    assert to_tool_call_item(' {"type":"function_call"} ').raw_json == ' {"type":"function_call"} '
    with pytest.raises(TypeError):
        to_tool_call_item(42)  # type: ignore[arg-type]


def test_turn_context_builder() -> None:
    turn = turn_context(
        environments=["local", ("far", "/srv")], cwd="/work", approval_policy="on_request",
        permission_profile="workspace-write", writable_roots=["/data"], network_access=True,
        active_profile_id="dev", shell_environment_policy={"inherit": "core", "set": {"A": "1"},
                                                           "exclude": ["*X*"]},
        shell_tool_type="unified_exec", features={"unified_exec_tty": False},
        allow_login_shell=False, truncation_tokens=1000, apply_patch_tool="disabled",
        advertise_command_batches=True,
    )
    assert [(e.environment_id, e.cwd) for e in turn.environments] == [("local", "/work"), ("far", "/srv")]
    assert turn.approval_policy.kind == common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST
    assert turn.permission_profile.kind == common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
    assert list(turn.permission_profile.writable_roots) == ["/data"]
    assert turn.permission_profile.network_access and turn.permission_profile.active_profile_id == "dev"
    assert turn.shell_environment_policy.inherit == shell_pb2.SHELL_ENVIRONMENT_INHERIT_CORE
    assert dict(turn.shell_environment_policy.set) == {"A": "1"}
    assert turn.features.HasField("unified_exec_tty") and not turn.features.unified_exec_tty
    assert not turn.features.HasField("unified_exec")
    assert turn.HasField("allow_login_shell") and not turn.allow_login_shell
    assert turn.truncation_policy.tokens == 1000
    assert turn.apply_patch_tool == common_pb2.APPLY_PATCH_TOOL_TYPE_DISABLED
    # Round trip through the protobuf JSON mapping (what `shellgate call --turn` reads).
    text = json_format.MessageToJson(turn)
    assert turn_from_json(text) == turn == to_turn_context(json.loads(text))
    granular = turn_context(approval_policy="granular", granular={"rules": True})
    assert granular.approval_policy.granular.rules and granular.approval_policy.HasField("granular")
    assert turn_context() == common_pb2.TurnContext() == to_turn_context(None)
    assert turn_context(cwd="/x").environments[0].environment_id == "local"
    for bad in ({"approval_policy": "sometimes"}, {"features": {"nope": True}},
                {"truncation_tokens": 1, "truncation_bytes": 1},
                {"shell_environment_policy": {"bogus": 1}}):
        with pytest.raises(ValueError):
            turn_context(**bad)  # type: ignore[arg-type]


def test_decision_parse() -> None:
    assert Decision.parse("approved-for-session") is Decision.APPROVED_FOR_SESSION
    assert Decision.parse(router_pb2.APPROVAL_DECISION_ABORT) is Decision.ABORT
    assert Decision.parse(Decision.DENIED) is Decision.DENIED


def test_client_does_not_import_the_router() -> None:
    code = ("import sys, shellgate.client, shellgate.client.call_cli; "
            "bad = sorted(m for m in sys.modules if m.startswith(('shellgate.router', "
            "'shellgate.execserver'))); print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
