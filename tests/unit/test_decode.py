"""Decode stage: router rules, dispatch texts, typed tool arguments, hostile input."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.decode.params import ExecCommandParams
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tool_call import (
    Arguments,
    Decoded,
    NoToolCall,
    PayloadKind,
    ToolCall,
    ToolError,
    build_tool_call,
    decode_exec_command_args,
    decode_session_id,
    decode_shell_command,
    decode_write_stdin,
    dispatch_error,
    exec_post_decode_check,
    parse_response_item,
)

P = "failed to parse function arguments: "


def test_exec_command_array_cmd_is_a_type_error() -> None:
    out = decode_exec_command_args(Arguments('{"cmd": ["ls"]}'))
    assert out == ToolError(P + "invalid type: sequence, expected a string at line 1 column 8")


def test_function_call_routes_raw_arguments() -> None:
    item = parse_response_item(
        '{"type":"function_call","name":"exec_command","namespace":"functions",'
        '"arguments":"not json","call_id":"c"}'
    )
    assert not isinstance(item, NoToolCall)
    call = build_tool_call(item)
    assert isinstance(call, ToolCall)
    assert call.tool_name.namespace is None
    assert call.arguments == "not json"
    assert call.kind is PayloadKind.FUNCTION


def test_function_call_with_object_arguments_is_dropped() -> None:
    item = {"type": "function_call", "name": "x", "arguments": {"cmd": "a"}, "call_id": "c"}
    assert isinstance(build_tool_call(item), NoToolCall)


def test_tool_search_errors_carry_no_position() -> None:
    item = {
        "type": "tool_search_call",
        "call_id": "s",
        "execution": "client",
        "arguments": {"query": 4},
    }
    assert build_tool_call(item) == ToolError(
        "failed to parse tool_search arguments: invalid type: integer `4`, expected a string"
    )
    server = {"type": "tool_search_call", "call_id": "s", "execution": "server", "arguments": {}}
    assert isinstance(build_tool_call(server), NoToolCall)


def test_local_shell_call_is_never_a_tool_call() -> None:
    item = {"type": "local_shell_call", "call_id": "x", "status": "completed",
            "action": {"type": "exec", "command": ["ls"]}}  # fmt: skip
    assert isinstance(build_tool_call(item), NoToolCall)


def test_dispatch_texts() -> None:
    shell_tools = {"exec_command", "write_stdin", "apply_patch"}
    assert dispatch_error("mcp__fooexec_command", PayloadKind.FUNCTION, shell_tools) == (
        "unsupported call: mcp__fooexec_command"
    )
    assert dispatch_error("x", PayloadKind.CUSTOM, shell_tools) == "unsupported custom tool call: x"
    assert dispatch_error("exec_command", PayloadKind.CUSTOM, shell_tools) == "aborted"
    assert dispatch_error("apply_patch", PayloadKind.FUNCTION, shell_tools) == "aborted"
    assert dispatch_error("exec_command", PayloadKind.FUNCTION, shell_tools) is None


def test_shell_command_batch_validation() -> None:
    assert decode_shell_command(Arguments('{"command":[]}')) == ToolError(
        P + "`command` array must not be empty"
    )
    assert decode_shell_command(Arguments('{"command":["a",""]}')) == ToolError(
        P + "`command[1]` must not be empty"
    )
    assert decode_shell_command(Arguments('{"command":["", 5]}')) == ToolError(
        P + "`command[0]` must not be empty"
    )
    out = decode_shell_command(Arguments('{"command":[" ", "b"]}'))
    assert isinstance(out, Decoded)
    assert out.params.command == (" ", "b")


def test_shell_command_syntax_error_wins_over_type_error() -> None:
    # The generic first pass sees the whole document before the typed pass runs.
    assert decode_shell_command(Arguments('{"command":5,"x":[1,]}')) == ToolError(
        P + "trailing comma at line 1 column 21"
    )


def test_exec_command_environment_pass_first_and_warnings() -> None:
    out = decode_exec_command_args(Arguments('{"cmd":"ls","b":1,"environment_id":"e","a":2,"b":3}'))
    assert isinstance(out, Decoded)
    assert out.params.environment_id == "e"
    assert out.warnings == ("unknown argument `b` was ignored", "unknown argument `a` was ignored")


def test_additional_permissions_resolve_relative_paths() -> None:
    text = '{"cmd":"ls","additional_permissions":{"file_system":{"write":["out","/abs"]}}}'
    from shellgate.router.decode.tool_call import decode_exec_command

    out = decode_exec_command(Arguments(text), "/repo")
    assert isinstance(out, Decoded)
    fs = (
        out.params.additional_permissions.file_system if out.params.additional_permissions else None
    )
    assert fs is not None and fs.write == ("/repo/out", "/abs")


def test_write_stdin_passes() -> None:
    assert decode_session_id(Arguments('{"session_id":-1,"chars":null}')) == -1
    assert decode_write_stdin(Arguments('{"session_id":1,"chars":null}')) == ToolError(
        P + "invalid type: null, expected a string at line 1 column 28"
    )


def test_exec_post_decode_rules() -> None:
    assert exec_post_decode_check(ExecCommandParams(cmd="x", tty=True), False) == ToolError(
        "TTY execution is disabled by config; omit `tty` or set it to false."
    )
    bad = exec_post_decode_check(ExecCommandParams(cmd="x", justification="j"), True)
    assert bad is not None and bad.text.startswith("`justification` requires")
    ok = ExecCommandParams(
        cmd="x", justification="j", sandbox_permissions=SandboxPermissions.REQUIRE_ESCALATED
    )
    assert exec_post_decode_check(ok, True) is None


DECODERS = (decode_shell_command, decode_exec_command_args, decode_write_stdin)

hostile = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.integers(1, 3000).map(lambda n: '{"cmd":' + "[" * n + "]" * n + "}"),
    st.integers(1, 3000).map(lambda n: '{"command":"x","k":' + "{\"a\":" * n + "1" + "}" * n + "}"),
    st.sampled_from(["null", "true", "[]", "{}", "1e999", "-0", '"x"', "[null]", '["a"]']),
    st.dictionaries(
        st.sampled_from(["cmd", "command", "session_id", "tty", "yield_time_ms", "workdir",
                         "login", "shell", "sandbox_permissions", "additional_permissions",
                         "prefix_rule", "timeout_ms", "chars", "max_output_tokens", "other"]),
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
                  allow_infinity=False), st.text(max_size=20), st.lists(st.text(max_size=5))),
    ).map(lambda d: __import__("json").dumps(d)),
)  # fmt: skip


# No per-example deadline: the bound below is the one timing check (hypothesis' deadline
# would be a second, tighter one).
@settings(max_examples=300, deadline=None)
@given(hostile)
def test_hostile_arguments_always_give_decoded_or_tool_error(text: str) -> None:
    for decoder in DECODERS:
        start = time.monotonic()
        out = decoder(Arguments(text))
        assert isinstance(out, Decoded | ToolError)
        if isinstance(out, ToolError):
            assert out.text
        # A bound against pathological (backtracking) inputs, not a speed target: a decode
        # of these short texts takes ~1 ms, so 5 s only fails on a blow-up.
        assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("decoder", DECODERS)
def test_huge_input_is_bounded(decoder: object) -> None:
    text = '{"cmd":"' + "y" * 9_000_000 + '"}'
    start = time.monotonic()
    out = decoder(Arguments(text))  # type: ignore[operator]
    assert isinstance(out, ToolError)
    assert "exceed" in out.text
    assert time.monotonic() - start < 2
