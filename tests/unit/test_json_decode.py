"""serde_json-compatible decoding: texts, positions, rendering, and hostile input."""

from __future__ import annotations

import contextlib
import json
import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.decode.serde_json.typed import (
    MISSING,
    Field,
    JsonError,
    ProductError,
    StructSpec,
    de_int,
    de_option,
    de_string,
    debug_str,
    decode_struct,
    format_float,
    parse_value,
)

SPEC = StructSpec(
    "Args",
    (
        Field("a", de_string, default=MISSING),
        Field("n", de_option(de_int("u64")), aliases=("num",)),
    ),
)


def _err(text: str, spec: StructSpec = SPEC) -> str:
    with pytest.raises(JsonError) as info:
        decode_struct(text, spec)
    return info.value.render()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "EOF while parsing a value at line 1 column 0"),
        ("{", "EOF while parsing an object at line 1 column 1"),
        ('{"a":', "EOF while parsing a value at line 1 column 5"),
        ('{"a":"x', "EOF while parsing a string at line 1 column 7"),
        ("{}", "missing field `a` at line 1 column 2"),
        ('{"a":"x",}', "trailing comma at line 1 column 10"),
        ('{"a":"x"} x', "trailing characters at line 1 column 11"),
        ('{"a":5}', "invalid type: integer `5`, expected a string at line 1 column 6"),
        ('{"a":-5}', "invalid type: integer `-5`, expected a string at line 1 column 7"),
        ('{"a":["x"]}', "invalid type: sequence, expected a string at line 1 column 5"),
        ('{"a": {}}', "invalid type: map, expected a string at line 1 column 6"),
        ('{"a":"x","n":-1}', "invalid value: integer `-1`, expected u64 at line 1 column 15"),
        (
            '{"a":"x","n":1.0}',
            "invalid type: floating point `1.0`, expected u64 at line 1 column 16",
        ),
        ('{"a":"x","n":1,"num":2}', "duplicate field `n` at line 1 column 20"),
        ('{"a":"x"\n,"b":tru}', "expected ident at line 2 column 9"),
        ('{"a":"x","b":[1,]}', "expected value at line 1 column 17"),
        ('{"a":"x","b":{"c":1,}}', "key must be a string at line 1 column 21"),
        ('{"a":"\\q"}', "invalid escape at line 1 column 8"),
        (
            '{"a":"\x01"}',
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 7",
        ),
        ('{"a":"\\udc00"}', "lone leading surrogate in hex escape at line 1 column 12"),
        ('{"a":"x" "n":1}', "expected `,` or `}` at line 1 column 10"),
        ('{"a" "x"}', "expected `:` at line 1 column 6"),
        ("[]", "invalid length 0, expected struct Args with 2 elements at line 1 column 2"),
        ("null", "invalid type: null, expected struct Args at line 1 column 4"),
        ('{"a":"x","n":1e999}', "number out of range at line 1 column 18"),
        ('{"a":01}', "invalid number at line 1 column 7"),
    ],
)
def test_error_texts_and_positions(text: str, expected: str) -> None:
    assert _err(text) == expected


def test_unknown_keys_are_skipped_in_document_order() -> None:
    result = decode_struct('{"z":[{"q":null}],"a":"x","y":1}', SPEC)
    assert result.values == {"a": "x", "n": None}
    assert result.unknown_keys == ["z", "y"]


def test_alias_fills_primary_field() -> None:
    assert decode_struct('{"a":"x","num":7}', SPEC).values["n"] == 7


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1000.0, "1000.0"),
        (0.00001, "0.00001"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1e-6, "1e-6"),
        (1.5e-7, "1.5e-7"),
        (-0.0, "-0.0"),
        (1.2345678901234567e23, "1.2345678901234567e+23"),
        (5e-324, "5e-324"),
    ],
)
def test_format_float(value: float, text: str) -> None:
    assert format_float(value) == text


def test_debug_str_escapes_like_rust() -> None:
    assert debug_str('a"b\\c\n\t\x1b\u00a0é') == '"a\\"b\\\\c\\n\\t\\u{1b}\\u{a0}é"'


def test_integer_overflow_becomes_float() -> None:
    assert "floating point `1e+20`" in _err('{"a":100000000000000000000}')
    assert "integer `12345678901234567890`" in _err('{"a":12345678901234567890}')


def test_generic_value_recursion_limit() -> None:
    deep = "[" * 127 + "]" * 127
    assert parse_value(deep) is not None
    with pytest.raises(JsonError) as info:
        parse_value("[" * 128 + "]" * 128)
    assert info.value.message == "recursion limit exceeded"


def test_skipped_values_have_no_depth_limit_and_are_iterative() -> None:
    text = '{"a":"x","deep":' + "[" * 100_000 + "]" * 100_000 + "}"
    assert decode_struct(text, SPEC).values["a"] == "x"


json_values = st.recursive(
    st.none()
    | st.booleans()
    # serde_json keeps integers as i64/u64 and reads anything outside that range as a float.
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=1000)
@given(json_values)
def test_valid_json_round_trips(value: object) -> None:
    text = json.dumps(value)
    # serde_json without `float_roundtrip` may be one ulp off; everything else is exact.
    assert _close(parse_value(text), json.loads(text))


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-15, abs_tol=0.0) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=1000)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises_unexpected(text: str) -> None:
    with contextlib.suppress(JsonError, ProductError):
        decode_struct(text, SPEC)
    with contextlib.suppress(JsonError):
        parse_value(text)


@settings(max_examples=200, deadline=1000)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise_unexpected(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    with contextlib.suppress(JsonError, ProductError):
        decode_struct(text, SPEC)


def test_huge_string_is_linear() -> None:
    text = '{"a":"' + "x" * 5_000_000 + '"}'
    start = time.monotonic()
    assert len(decode_struct(text, SPEC).values["a"]) == 5_000_000
    assert time.monotonic() - start < 5
