"""`Arguments`: one parse per call, shared by every decode pass, never changing a result.

Two properties: the C-parser fast value an `Arguments` carries agrees with the exact
serde_json port on every input, or refuses; and decoding a call's passes through one shared
`Arguments` gives exactly what decoding each pass from the bare text gives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shellgate.router.decode.params import (
    TERMINAL_SESSION_SPEC,
    WRITE_STDIN_SPEC,
    exec_command_spec,
    shell_command_spec,
)
from shellgate.router.decode.serde_json.fast import Arguments, Slow, loads, loads_value
from shellgate.router.decode.serde_json.reader import Reader
from shellgate.router.decode.serde_json.typed import (
    JsonError,
    ProductError,
    StructResult,
    StructSpec,
    de_struct,
    decode_struct,
    parse_value,
)
from shellgate.router.decode.serde_json.values import de_value
from shellgate.router.decode.tool_call import (
    decode_exec_command,
    decode_exec_environment_id,
    decode_exec_workdir,
    decode_session_id,
    decode_shell_command,
    decode_write_stdin,
    shell_command_workdir,
)

SPECS = [
    shell_command_spec(None),
    shell_command_spec("/work"),
    exec_command_spec("/work"),
    TERMINAL_SESSION_SPEC,
    WRITE_STDIN_SPEC,
]


def _exact_value(text: str) -> Any:
    r = Reader(text)
    value = de_value(r)
    r.end()
    return value


def _exact_struct(text: str, spec: StructSpec) -> Any:
    r = Reader(text)
    result = de_struct(spec)(r)
    r.end()
    return result


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        result = fn(*args)
    except JsonError as err:
        return "json", err.render()
    except ProductError as err:
        return "product", err.message
    except RecursionError:
        return "recursion", None
    if isinstance(result, StructResult):
        return "ok", (result.values, result.unknown_keys)
    return "ok", result


def _same(a: Any, b: Any) -> bool:
    """Equal, with identical types (1 vs 1.0 vs True matter to the typed decoders)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


# Each tool's decode passes in the order the handler runs them (spec 02 §3.1, §4.1, §4.2).
PASSES = (
    (shell_command_workdir, lambda a: decode_shell_command(a, "/w", first_pass_done=True)),
    (decode_exec_environment_id, decode_exec_workdir, lambda a: decode_exec_command(a, "/w")),
    (decode_session_id, decode_write_stdin),
)


def check(text: str) -> None:
    """Fast == exact on `text`, and a shared `Arguments` == the bare text in every pass."""
    fast, exact = _outcome(parse_value, text), _outcome(_exact_value, text)
    assert fast[0] == exact[0] and _same(fast[1], exact[1]), (text, fast, exact)
    shared = Arguments(text)
    for spec in SPECS:
        fast, exact = _outcome(decode_struct, text, spec), _outcome(_exact_struct, text, spec)
        assert fast[0] == exact[0] and _same(fast[1], exact[1]), (text, spec.name, fast, exact)
        again = _outcome(decode_struct, shared, spec)
        assert again[0] == exact[0] and _same(again[1], exact[1]), (text, spec.name, again)
    for passes in PASSES:
        one = Arguments(text)
        for decode in passes:
            # repr tells 1 from 1.0 and True from 1, which == does not.
            assert repr(decode(one)) == repr(decode(Arguments(text))), (text, decode)


EDGE_CASES = [
    '{"command": "ls"}',
    '{"command": "ls", "command": "pwd"}',
    '{"command": "ls", "timeout": 5, "timeout_ms": 6}',
    '{"command": "ls", "timeout_ms": 1.5}',
    '{"command": "ls", "timeout_ms": 1e3}',
    '{"command": "ls", "timeout_ms": -0}',
    '{"command": "ls", "timeout_ms": -1}',
    '{"command": "ls", "timeout_ms": 18446744073709551615}',
    '{"command": "ls", "timeout_ms": 18446744073709551616}',
    '{"command": "ls", "x": -9223372036854775808}',
    '{"command": "ls", "x": -9223372036854775809}',
    '{"command": "ls", "x": NaN}',
    '{"command": "ls", "x": Infinity}',
    '{"command": "ls", "x": -Infinity}',
    '{"command": "\\ud800"}',
    '{"command": "\\udc00x"}',
    '{"command": "\\ud83d\\ude00"}',
    '{"command": "ls", "\\ud800": 1}',
    '{"command": "\ud800"}',
    '{"command": "café \\u00e9"}',
    '{"command": "ls"} x',
    '{"command": "ls",}',
    '["ls", "/tmp"]',
    "[]",
    "{}",
    "",
    " ",
    "null",
    "1",
    '"s"',
    '{"command": []}',
    '{"command": ["a", ""]}',
    '{"command": ["a", 1]}',
    '{"command": ["a", "b"]}',
    '{"command": "ls", "login": "yes"}',
    '{"command": "ls", "login": null, "workdir": null}',
    '{"command": "ls", "sandbox_permissions": {"use_default": null}}',
    '{"command": "ls", "sandbox_permissions": "use_default"}',
    '{"command": "ls", "sandbox_permissions": "nope"}',
    '{"command": "ls", "prefix_rule": []}',
    '{"command": "ls", "prefix_rule": ["git", 1]}',
    '{"command": "ls", "additional_permissions": null}',
    '{"command": "ls", "additional_permissions": {"network": {"enabled": true}}}',
    '\ufeff{"command": "ls"}',
    '  {"command": "ls"}  \n',
    '{"command": "ls", "timeout_ms": 01}',
    '{"command": "ls\tx"}',
    '{"command": "ls\\u0000x"}',
    '{"command": "ls", "a": ' + "[" * 200 + "]" * 200 + "}",
    '{"command": "ls", "a": ' + "[" * 127 + "]" * 127 + "}",
    '{"command": "ls", "a": ' + "[" * 128 + "]" * 128 + "}",
    '{"command": "ls", "a": ' + "[" * 2000 + "]" * 2000 + "}",
    "[" * 70 + "]" * 70,
    '{"cmd": "ls", "tty": true, "yield_time_ms": 5, "max_output_tokens": null}',
    '{"cmd": "ls", "tty": null}',
    '{"cmd": "ls", "yield_time_ms": -1}',
    '{"cmd": "ls", "environment_id": 5}',
    '{"session_id": 2147483647, "chars": "x"}',
    '{"session_id": 2147483648}',
    '{"session_id": -2147483648}',
    '{"session_id": true}',
    '{"a": {"b": {"a": 1, "a": 2}}, "command": "x"}',
    '{"command": "x", "n": 123456789012345678901234567890}',
    '{"command": "x", "n": 1' + "0" * 5000 + "}",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_agree(text: str) -> None:
    check(text)


def test_fast_path_is_taken_for_plain_arguments() -> None:
    """The common case never needs the exact reader."""
    assert loads('{"command": "ls -la", "timeout_ms": 10, "login": false}') == {
        "command": "ls -la",
        "timeout_ms": 10,
        "login": False,
    }
    assert loads('{"command": "\\ud83d\\ude00 é"}') == {"command": "\U0001f600 é"}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": 1.0}',
        '{"a": -0}',
        '{"a": NaN}',
        '{"a": "\\ud800"}',
        '{"a": 18446744073709551616}',
        "\ufeff{}",
        "{",
    ],
)
def test_fast_path_refuses(text: str) -> None:
    with pytest.raises(Slow):
        loads(text)


def test_value_depth_refused() -> None:
    with pytest.raises(Slow):
        loads_value("[" * 100 + "]" * 100)


def test_arguments_parse_once_and_remember_a_refusal() -> None:
    args = Arguments('{"cmd": "ls", "workdir": "/w"}')
    first = args.fast()
    assert first == {"cmd": "ls", "workdir": "/w"}
    assert args.fast() is first and args.fast_value() is first
    refused = Arguments('{"a": 1.5}')
    for _ in range(2):
        with pytest.raises(Slow):
            refused.fast()
    # Deep values: `fast` answers (structs never nest that deep), `fast_value` refuses.
    deep = Arguments("[" * 100 + "]" * 100)
    assert isinstance(deep.fast(), list)
    with pytest.raises(Slow):
        deep.fast_value()
    assert Arguments("{}") == Arguments("{}") and hash(Arguments("x")) == hash(Arguments("x"))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 65), max_value=1 << 65),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["command", "cmd", "workdir", "login", "timeout", "timeout_ms", "tty", "yield_time_ms",
     "max_output_tokens", "sandbox_permissions", "prefix_rule", "additional_permissions",
     "justification", "shell", "session_id", "chars", "environment_id", "other"]
)  # fmt: skip
_args = st.dictionaries(_keys, _values, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_args, st.booleans())
def test_generated_arguments_agree(args: dict[str, Any], ascii_only: bool) -> None:
    check(json.dumps(args, ensure_ascii=ascii_only))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_args, st.integers(min_value=0, max_value=200), st.sampled_from(list(' ,:{}[]"\\-0e.x')))
def test_mutated_arguments_agree(args: dict[str, Any], at: int, char: str) -> None:
    text = json.dumps(args)
    at = min(at, len(text))
    check(text[:at] + char + text[at:])
    check(text[:at] + text[at + 1 :])
