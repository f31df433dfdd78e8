"""serde_json value decoders: scalars, Option, enums, sequences and generic `Value`.

Each decoder takes a `Reader` positioned before a value and returns the Python value, raising
`JsonError` exactly where serde_json would (its `fix_position` is `Reader.fix`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Final

from shellgate.router.decode.rust_text import debug_str
from shellgate.router.decode.serde_json.cursor import (
    EOF_LIST,
    EOF_OBJECT,
    EOF_VALUE,
    EXPECTED_COLON,
    EXPECTED_LIST_COMMA,
    EXPECTED_OBJECT_COMMA,
    EXPECTED_VALUE,
    I32_MAX,
    I32_MIN,
    KEY_NOT_STRING,
    TRAILING_CHARS,
    TRAILING_COMMA,
    U64_MAX,
    JsonError,
    Number,
)
from shellgate.router.decode.serde_json.fast import Arguments, Slow
from shellgate.router.decode.serde_json.reader import Reader
from shellgate.router.decode.serde_json.render import format_float

Decoder = Callable[[Reader], Any]


class ProductError(Exception):
    """A shellgate decode error whose text carries no serde position (decision 3a)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def invalid_type(unexpected: str, expected: str) -> JsonError:
    """`invalid type: {unexpected}, expected {expected}` (unpositioned)."""
    return JsonError(f"invalid type: {unexpected}, expected {expected}")


def _number_unexpected(num: Number) -> str:
    if num.kind == "f":
        return f"floating point `{format_float(float(num.value))}`"
    return f"integer `{num.value}`"


def peek_invalid_type(r: Reader, expected: str) -> JsonError:
    """serde_json's peek_invalid_type: consume the offending scalar and name it."""
    peek = r.peek_or_null()
    if peek == 0x6E:
        r.eat()
        r.parse_ident(b"ull")
        err = invalid_type("null", expected)
    elif peek == 0x74:
        r.eat()
        r.parse_ident(b"rue")
        err = invalid_type("boolean `true`", expected)
    elif peek == 0x66:
        r.eat()
        r.parse_ident(b"alse")
        err = invalid_type("boolean `false`", expected)
    elif peek == 0x2D:
        r.eat()
        err = invalid_type(_number_unexpected(r.parse_integer(False)), expected)
    elif 0x30 <= peek <= 0x39:
        err = invalid_type(_number_unexpected(r.parse_integer(True)), expected)
    elif peek == 0x22:
        r.eat()
        err = invalid_type(f"string {debug_str(r.parse_str())}", expected)
    elif peek == 0x5B:
        err = invalid_type("sequence", expected)
    elif peek == 0x7B:
        err = invalid_type("map", expected)
    else:
        return r.peek_error(EXPECTED_VALUE)
    return r.fix(err)


def peek_value(r: Reader) -> int:
    peek = r.parse_whitespace()
    if peek is None:
        raise r.peek_error(EOF_VALUE)
    return peek


# --- scalar decoders -------------------------------------------------------------------
def de_string(r: Reader) -> str:
    """`String`: expected `a string`."""
    if peek_value(r) != 0x22:
        raise peek_invalid_type(r, "a string")
    r.eat()
    return r.parse_str()


def de_bool(r: Reader) -> bool:
    """`bool`: expected `a boolean`."""
    peek = peek_value(r)
    if peek == 0x74:
        r.eat()
        r.parse_ident(b"rue")
        return True
    if peek == 0x66:
        r.eat()
        r.parse_ident(b"alse")
        return False
    raise peek_invalid_type(r, "a boolean")


_INT_RANGES: Final = {"u64": (0, U64_MAX), "usize": (0, U64_MAX), "i32": (I32_MIN, I32_MAX)}


def de_int(kind: str) -> Decoder:
    """An integer field of Rust type `kind` (`u64`, `usize` or `i32`)."""
    low, high = _INT_RANGES[kind]

    def decode(r: Reader) -> int:
        peek = peek_value(r)
        if peek == 0x2D:
            r.eat()
            num = r.parse_integer(False)
        elif 0x30 <= peek <= 0x39:
            num = r.parse_integer(True)
        else:
            raise peek_invalid_type(r, kind)
        if num.kind == "f":
            raise r.fix(invalid_type(_number_unexpected(num), kind))
        value = int(num.value)
        if not low <= value <= high:
            raise r.fix(JsonError(f"invalid value: integer `{value}`, expected {kind}"))
        return value

    return decode


def de_option(inner: Decoder) -> Decoder:
    """`Option<T>`: `null` is None."""

    def decode(r: Reader) -> Any:
        if r.parse_whitespace() == 0x6E:
            r.eat()
            r.parse_ident(b"ull")
            return None
        return inner(r)

    return decode


def de_enum(variants: Sequence[str]) -> Decoder:
    """A unit-variant enum in externally tagged form (a string, or `{"variant": null}`)."""
    listing = ", ".join(f"`{v}`" for v in variants)

    def variant(r: Reader) -> str:
        name = de_string(r) if r.parse_whitespace() == 0x22 else MISSING
        if name is MISSING:
            raise peek_invalid_type(r, "variant identifier")
        if name not in variants:
            raise r.fix(JsonError(f"unknown variant `{name}`, expected one of {listing}"))
        return str(name)

    def decode(r: Reader) -> str:
        peek = r.parse_whitespace()
        if peek is None:
            raise r.peek_error(EOF_VALUE)
        if peek == 0x22:
            return variant(r)
        if peek != 0x7B:
            raise r.peek_error(EXPECTED_VALUE)
        r.enter()
        r.eat()
        name = variant(r)
        object_colon(r)
        if peek_value(r) != 0x6E:  # a unit variant's content is `()`
            raise peek_invalid_type(r, "unit")
        r.eat()
        r.parse_ident(b"ull")
        r.leave()
        peek = r.parse_whitespace()
        if peek == 0x7D:
            r.eat()
            return name
        raise r.error(EXPECTED_VALUE if peek is not None else EOF_OBJECT)

    return decode


# --- containers --------------------------------------------------------------------------
def _end_seq(r: Reader) -> None:
    peek = r.parse_whitespace()
    if peek == 0x5D:
        r.eat()
        return
    if peek == 0x2C:
        r.eat()
        raise r.peek_error(TRAILING_COMMA if r.parse_whitespace() == 0x5D else TRAILING_CHARS)
    raise r.peek_error(EOF_LIST if peek is None else TRAILING_CHARS)


def _end_map(r: Reader) -> None:
    peek = r.parse_whitespace()
    if peek == 0x7D:
        r.eat()
        return
    if peek == 0x2C:
        raise r.peek_error(TRAILING_COMMA)
    raise r.peek_error(EOF_OBJECT if peek is None else TRAILING_CHARS)


def object_colon(r: Reader) -> None:
    peek = r.parse_whitespace()
    if peek == 0x3A:
        r.eat()
        return
    raise r.peek_error(EOF_OBJECT if peek is None else EXPECTED_COLON)


def next_element(r: Reader, first: bool) -> bool:
    """serde_json SeqAccess: True when another element follows (positioned at it)."""
    peek = r.parse_whitespace()
    if peek == 0x5D:
        return False
    if peek == 0x2C and not first:
        r.eat()
        peek = r.parse_whitespace()
    elif peek is not None and not first:
        raise r.peek_error(EXPECTED_LIST_COMMA)
    elif peek is None:
        raise r.peek_error(EOF_LIST)
    if peek == 0x5D:
        raise r.peek_error(TRAILING_COMMA)
    if peek is None:
        raise r.peek_error(EOF_VALUE)
    return True


def next_key(r: Reader, first: bool) -> str | None:
    """serde_json MapAccess: the next key (string parsed), or None at `}`."""
    peek = r.parse_whitespace()
    if peek == 0x7D:
        return None
    if peek == 0x2C and not first:
        r.eat()
        peek = r.parse_whitespace()
    elif peek is not None and not first:
        raise r.peek_error(EXPECTED_OBJECT_COMMA)
    elif peek is None:
        raise r.peek_error(EOF_OBJECT)
    if peek == 0x22:
        r.eat()
        return r.parse_str()
    if peek == 0x7D:
        raise r.peek_error(TRAILING_COMMA)
    raise r.peek_error(EOF_VALUE if peek is None else KEY_NOT_STRING)


def container(r: Reader, open_byte: int, expected: str, body: Callable[[], Any]) -> Any:
    """serde_json's deserialize_seq/deserialize_struct frame: recursion, end check, fix."""
    if peek_value(r) != open_byte:
        raise peek_invalid_type(r, expected)
    r.enter()
    r.eat()
    try:
        result = body()
    except JsonError as err:
        # serde_json evaluates end_seq/end_map even after the visitor failed.
        r.leave()
        with contextlib.suppress(JsonError):
            (_end_seq if open_byte == 0x5B else _end_map)(r)
        raise r.fix(err) from None
    r.leave()
    try:
        (_end_seq if open_byte == 0x5B else _end_map)(r)
    except JsonError as err:
        raise r.fix(err) from None
    return result


def de_seq(inner: Decoder) -> Decoder:
    """`Vec<T>`: expected `a sequence`."""

    def decode(r: Reader) -> list[Any]:
        def body() -> list[Any]:
            items: list[Any] = []
            while next_element(r, not items):
                items.append(inner(r))
            return items

        result: list[Any] = container(r, 0x5B, "a sequence", body)
        return result

    return decode


def de_value(r: Reader) -> Any:
    """`serde_json::Value` (deserialize_any): dict/list/str/int/float/bool/None."""
    peek = peek_value(r)
    if peek == 0x6E:
        r.eat()
        r.parse_ident(b"ull")
        return None
    if peek in (0x74, 0x66):
        return de_bool(r)
    if peek == 0x2D or 0x30 <= peek <= 0x39:
        if peek == 0x2D:
            r.eat()
        num = r.parse_integer(peek != 0x2D)
        return num.value
    if peek == 0x22:
        r.eat()
        return r.parse_str()
    if peek == 0x5B:
        return de_seq(de_value)(r)
    if peek == 0x7B:

        def body() -> dict[str, Any]:
            out: dict[str, Any] = {}
            first = True
            while (key := next_key(r, first)) is not None:
                first = False
                object_colon(r)
                out[key] = de_value(r)  # later duplicates win, as in serde_json's Value
            return out

        obj: dict[str, Any] = container(r, 0x7B, "a map", body)
        return obj
    raise r.peek_error(EXPECTED_VALUE)


def parse_value(source: str | Arguments) -> Any:
    """`serde_json::from_str::<Value>` of a text (or of the text an `Arguments` carries)."""
    if isinstance(source, str):
        source = Arguments(source)
    try:
        return source.fast_value()
    except Slow:
        pass
    r = Reader(source.text)
    value = de_value(r)
    r.end()
    return value
