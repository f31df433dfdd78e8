"""serde-style typed JSON decoding with serde_json's exact error texts and positions.

Public API:

* `StructSpec` / `Field` describe a `#[derive(Deserialize)]` struct; `decode_struct(text, spec)`
  runs `serde_json::from_str` for it and returns a `StructResult` (fields present, unknown top
  level keys in document order) or raises `JsonError` (render with `.render()`).
* Field decoders (`de_string`, `de_bool`, `de_int`, `de_option`, `de_seq`, `de_enum`,
  `de_value`, `de_struct`) take a `Reader` and return the Python value; they are the building
  blocks for the tool argument records of `decode.py`.
* `parse_value(text)` is `serde_json::from_str::<Value>` (recursion limit 128).
* `format_float` / `debug_str` render serde's `Unexpected` values.

Errors without a position are positioned by the nearest enclosing value decoder, exactly as
serde_json's `fix_position` does. `ProductError` (shellgate's own texts) is never positioned.
"""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from shellgate.router.json_reader import (
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
    Reader,
)

__all__ = [
    "MISSING",
    "Decoder",
    "Field",
    "JsonError",
    "ProductError",
    "Reader",
    "StructResult",
    "StructSpec",
    "de_bool",
    "de_enum",
    "de_int",
    "de_option",
    "de_seq",
    "de_string",
    "de_struct",
    "de_value",
    "debug_str",
    "decode_struct",
    "format_float",
    "invalid_type",
    "parse_value",
    "peek_invalid_type",
    "peek_value",
]

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


# --- rendering serde's `Unexpected` ------------------------------------------------------
def format_float(value: float) -> str:
    """serde's `floating point` rendering: shortest round-trip digits, exponent outside [-5, 15]."""
    if value == 0.0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    tup = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, tup.digits)).rstrip("0") or "0"
    assert isinstance(tup.exponent, int)
    # Position of the decimal point relative to the start of `digits`.
    point = len(tup.digits) + tup.exponent
    exp10 = point - 1
    if -5 <= exp10 <= 15:
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
        return sign + text
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if exp10 >= 0 else '-'}{abs(exp10)}"


_DEBUG_ESCAPES: Final = {
    "\t": "\\t",
    "\r": "\\r",
    "\n": "\\n",
    "\\": "\\\\",
    '"': '\\"',
    "\0": "\\0",
}


def _needs_unicode_escape(ch: str) -> bool:
    # Rust escapes non-printable chars (categories C*/Z* except space) and grapheme extenders.
    if ch == " ":
        return False
    category = unicodedata.category(ch)
    return category[0] in "CZ" or category in ("Mn", "Me")


def debug_str(text: str) -> str:
    """Rust's `{:?}` rendering of a str."""
    out = ['"']
    for ch in text:
        esc = _DEBUG_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif _needs_unicode_escape(ch):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


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
        _object_colon(r)
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


def _object_colon(r: Reader) -> None:
    peek = r.parse_whitespace()
    if peek == 0x3A:
        r.eat()
        return
    raise r.peek_error(EOF_OBJECT if peek is None else EXPECTED_COLON)


def _next_element(r: Reader, first: bool) -> bool:
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


def _next_key(r: Reader, first: bool) -> str | None:
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


def _container(r: Reader, open_byte: int, expected: str, body: Callable[[], Any]) -> Any:
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
            while _next_element(r, not items):
                items.append(inner(r))
            return items

        result: list[Any] = _container(r, 0x5B, "a sequence", body)
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
            while (key := _next_key(r, first)) is not None:
                first = False
                _object_colon(r)
                out[key] = de_value(r)  # later duplicates win, as in serde_json's Value
            return out

        obj: dict[str, Any] = _container(r, 0x7B, "a map", body)
        return obj
    raise r.peek_error(EXPECTED_VALUE)


def parse_value(text: str) -> Any:
    """`serde_json::from_str::<Value>`."""
    r = Reader(text)
    value = de_value(r)
    r.end()
    return value


# --- structs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """One struct field: decoder, aliases, and what an absent field becomes."""

    name: str
    decode: Decoder
    aliases: tuple[str, ...] = ()
    # MISSING: required; None: Option (absent → None); anything else: `#[serde(default)]`.
    default: Any = None
    # Option fields without `#[serde(default)]` are still required in the sequence form.
    seq_default: bool = False

    def __post_init__(self) -> None:
        if self.default is not None and self.default is not MISSING:
            object.__setattr__(self, "seq_default", True)


@dataclass(frozen=True)
class StructSpec:
    """A `#[derive(Deserialize)]` struct."""

    name: str
    fields: tuple[Field, ...]

    def lookup(self, key: str) -> Field | None:
        """The field a key names (primary name or alias)."""
        for f in self.fields:
            if key == f.name or key in f.aliases:
                return f
        return None


@dataclass
class StructResult:
    """A decoded struct: every field's value, plus the unknown keys in document order."""

    values: dict[str, Any]
    unknown_keys: list[str] = field(default_factory=list)


def _visit_map(r: Reader, spec: StructSpec) -> StructResult:
    seen: dict[str, Any] = {}
    unknown: list[str] = []
    first = True
    while (key := _next_key(r, first)) is not None:
        first = False
        f = spec.lookup(key)
        if f is None:
            unknown.append(key)
            _object_colon(r)
            r.ignore_value()
            continue
        if f.name in seen:
            raise JsonError(f"duplicate field `{f.name}`")
        _object_colon(r)
        seen[f.name] = f.decode(r)
    values: dict[str, Any] = {}
    for f in spec.fields:
        if f.name in seen:
            values[f.name] = seen[f.name]
        elif f.default is MISSING:
            raise JsonError(f"missing field `{f.name}`")
        else:
            values[f.name] = f.default
    return StructResult(values, unknown)


def _visit_seq(r: Reader, spec: StructSpec) -> StructResult:
    count = len(spec.fields)
    expecting = f"struct {spec.name} with {count} element{'' if count == 1 else 's'}"
    values: dict[str, Any] = {}
    for i, f in enumerate(spec.fields):
        if _next_element(r, i == 0):
            values[f.name] = f.decode(r)
        elif f.seq_default:
            values[f.name] = f.default
        else:
            raise JsonError(f"invalid length {i}, expected {expecting}")
    return StructResult(values)


def de_struct(spec: StructSpec) -> Callable[[Reader], StructResult]:
    """serde_json's deserialize_struct: an object (or the positional array form)."""

    def decode(r: Reader) -> StructResult:
        peek = peek_value(r)
        if peek == 0x5B:
            result: StructResult = _container(
                r, 0x5B, f"struct {spec.name}", lambda: _visit_seq(r, spec)
            )
            return result
        result = _container(r, 0x7B, f"struct {spec.name}", lambda: _visit_map(r, spec))
        return result

    return decode


def decode_struct(text: str, spec: StructSpec) -> StructResult:
    """`serde_json::from_str::<spec>(text)`; raises JsonError or ProductError."""
    r = Reader(text)
    result = de_struct(spec)(r)
    r.end()
    return result
