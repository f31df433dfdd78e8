"""Hypothesis strategies for model output items and tool argument strings: valid, near-valid
and hostile (wrong types, huge numbers, deep nesting, bad escapes, lone surrogates, NUL)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TOOL_NAMES = ("shell_command", "exec_command", "write_stdin", "apply_patch", "shell",
              "local_shell", "container.exec", "unknown_tool", "")  # fmt: skip
ITEM_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call",
              "message", "reasoning", "function_call_output", "", "FUNCTION_CALL")  # fmt: skip
ARG_KEYS = ("command", "cmd", "workdir", "timeout_ms", "login", "shell", "tty",
            "yield_time_ms", "max_output_tokens", "session_id", "chars", "justification",
            "sandbox_permissions", "prefix_rule", "environment_id", "additional_permissions",
            "with_escalated_permissions", "input")  # fmt: skip

# Scripts that exercise the bash parser: control flow, heredocs, substitutions, wrappers.
SCRIPTS = (
    "ls -la", "git status && git diff", "rm -rf /tmp/x", "sudo rm -rf ~", "echo $(whoami)",
    "for f in *; do rm -f $f; done", "cat <<'EOF'\nhello\nEOF", "bash -lc \"bash -c 'ls'\"",
    "a=1 b=2 env", "echo \"unterminated", "((((((", "`ls`", "x() { x | x & }; x",
    "echo 'a' \"b\" c\\ d", "find . -name '*.py' -delete", "python3 - <<PY\nprint(1)\nPY",
    "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch",
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: nope\n*** End Patch\nEOF",
)  # fmt: skip
PATCHES = (
    "*** Begin Patch\n*** Add File: fuzz.txt\n+hello\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch",
    "*** Begin Patch\n*** Delete File: ../../etc/passwd\n*** End Patch",
    "*** Begin Patch\n", "", "not a patch", "*** Begin Patch\n*** Add File: \n+x\n*** End Patch",
)  # fmt: skip

# Raw JSON fragments that json.dumps cannot produce: bad escapes, lone surrogates, NUL,
# numbers outside every integer type, deep nesting, truncation.
HOSTILE_JSON = (
    '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"a\\x41"', '"\\u12"', '"\\', "1e400",
    "-1e400", "99999999999999999999999999999", "-99999999999999999999999", "1.5", "-0",
    "0x10", "NaN", "Infinity", "[" * 200 + "]" * 200, "[" * 5000, "{" * 3000,
    '{"a":' * 2000 + "1" + "}" * 2000, "true", "null", "[]", "{}", '"\x00"', '"\t"',
    "\"\ud7ff\"", '"\\ud83d\\ude00"', "", " ", "{,}", '{"a" 1}', "[1,]", "tru", '"\\/"',
)  # fmt: skip

text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40
)  # protobuf strings must be valid UTF-8; lone surrogates travel as JSON escapes instead
script = st.one_of(st.sampled_from(SCRIPTS), text)


def _json_value(depth: int = 3) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), text,
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(min_value=2**63, max_value=2**80),
    )  # fmt: skip
    if depth == 0:
        return scalars
    inner = _json_value(depth - 1)
    return st.one_of(scalars, st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3))


json_value = _json_value()


@st.composite
def valid_args(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments that decode for one of the shell tools."""
    kind = draw(st.sampled_from(("shell_command", "exec_command", "write_stdin", "batch")))
    if kind == "write_stdin":
        return {"session_id": draw(st.integers(-5, 2000)), "chars": draw(text),
                "yield_time_ms": draw(st.integers(0, 10**7))}  # fmt: skip
    args: dict[str, Any] = {}
    if kind == "batch":
        args["command"] = draw(st.lists(script, min_size=1, max_size=3))
    else:
        args["command" if kind == "shell_command" else "cmd"] = draw(script)
    optional = {
        "workdir": st.sampled_from(("", ".", "/", "sub/dir", "../..", "/nonexistent\u00e9")),
        "timeout_ms": st.integers(-(2**40), 2**40),
        "login": st.booleans(),
        "tty": st.booleans(),
        "yield_time_ms": st.integers(0, 2**31),
        "max_output_tokens": st.integers(0, 2**31),
        "sandbox_permissions": st.sampled_from(
            ("use_default", "require_escalated", "with_additional_permissions", "bogus")
        ),
        "justification": text,
        "prefix_rule": st.lists(text, max_size=3),
        "shell": st.sampled_from(("bash", "/bin/sh", "zsh", "pwsh", "cmd", "fish")),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        args[key] = draw(optional[key])
    return args


@st.composite
def near_valid_args(draw: st.DrawFn) -> dict[str, Any]:
    """Valid arguments with one or two keys replaced by wrongly typed or extreme values."""
    args = draw(valid_args())
    for key in draw(st.lists(st.sampled_from(ARG_KEYS), min_size=1, max_size=2)):
        args[key] = draw(json_value)
    return args


@st.composite
def argument_string(draw: st.DrawFn) -> str:
    """The `arguments` string of a function call: JSON text, mangled JSON or raw garbage."""
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return json.dumps(draw(valid_args()), ensure_ascii=draw(st.booleans()))
    if choice == 1:
        return json.dumps(draw(near_valid_args()))
    if choice == 2:
        key = draw(st.sampled_from(ARG_KEYS))
        return f'{{"{key}": {draw(st.sampled_from(HOSTILE_JSON))}}}'
    if choice == 3:
        good = json.dumps(draw(valid_args()))
        cut = draw(st.integers(0, len(good)))
        return good[:cut] + draw(st.sampled_from(HOSTILE_JSON))
    if choice == 4:
        return json.dumps(draw(json_value))
    return draw(text)


@st.composite
def output_item(draw: st.DrawFn) -> str:
    """One raw Responses API output item as JSON text, from valid to hostile."""
    choice = draw(st.integers(0, 6))
    name = draw(st.sampled_from(TOOL_NAMES))
    call_id = draw(st.one_of(st.just("call_1"), text))
    if choice <= 2:
        args = draw(valid_args()) if choice < 2 else None
        if args is not None:
            # Name the tool the arguments were built for, so most calls reach the projections.
            name = (
                "write_stdin"
                if "session_id" in args
                else ("shell_command" if "command" in args else "exec_command")
            )
        arguments = json.dumps(args) if args is not None else draw(argument_string())
        item = {"type": "function_call", "name": name, "arguments": arguments,
                "call_id": call_id}  # fmt: skip
        if draw(st.booleans()):
            item["namespace"] = draw(text)
        return json.dumps(item, ensure_ascii=draw(st.booleans()))
    if choice == 3:
        body = draw(st.one_of(st.sampled_from(PATCHES), text))
        return json.dumps({"type": "custom_tool_call", "name": "apply_patch", "input": body,
                           "call_id": call_id})  # fmt: skip
    if choice == 4:
        item = {"type": draw(st.sampled_from(ITEM_TYPES)), "name": name, "call_id": call_id}
        for key in draw(st.lists(st.sampled_from(("arguments", "input", "action", "id",
                                                  "status", "content")), max_size=3)):  # fmt: skip
            item[key] = draw(json_value)
        return json.dumps(item)
    if choice == 5:
        fragment = draw(st.sampled_from(HOSTILE_JSON))
        field = draw(st.sampled_from(("arguments", "name", "call_id", "type")))
        return (
            f'{{"type":"function_call","name":"exec_command","call_id":"c","{field}":{fragment}}}'
        )
    return draw(st.one_of(text, st.sampled_from(HOSTILE_JSON)))


def megabyte_items() -> list[str]:
    """A handful of large items: MiB scripts, MiB argument strings, deep nesting."""
    mib = 1024 * 1024
    big_script = "echo " + "a" * mib
    # 32 768 tiny commands (256 KiB): the per-command policy work is linear but not free
    # (about 45 µs each on CI), so a MiB of them would dominate the suite's time budget.
    many_cmds = "true && " * (mib // 32) + "true"
    items = [
        json.dumps({"type": "function_call", "name": "exec_command",
                    "arguments": json.dumps({"cmd": big_script}), "call_id": "big1"}),
        json.dumps({"type": "function_call", "name": "shell_command",
                    "arguments": json.dumps({"command": many_cmds}), "call_id": "big2"}),
        json.dumps({"type": "function_call", "name": "exec_command",
                    "arguments": "[" * mib, "call_id": "big3"}),
        json.dumps({"type": "custom_tool_call", "name": "apply_patch",
                    "input": "*** Begin Patch\n*** Add File: a\n" + "+x\n" * (mib // 3)
                    + "*** End Patch", "call_id": "big4"}),
        "[" * mib,
        json.dumps({"type": "function_call", "name": "exec_command",
                    "arguments": json.dumps({"cmd": "echo '" + "\u0000\ud7ff" * (mib // 8)}),
                    "call_id": "big5"}),
    ]  # fmt: skip
    return items
