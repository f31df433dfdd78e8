"""A fast path for serde-style decoding: C `json.loads` when it provably agrees with serde_json.

The exact decoders (`json_values`, `json_decode`) walk the text byte by byte in Python so that
every error carries serde_json's text and position. Most tool arguments are small, plain
objects that decode without error; for those, CPython's C parser yields the same values at a
fraction of the cost. `loads` refuses (raises `Slow`) whenever the two could differ —
anything serde_json rejects or reads differently (syntax errors, NaN/Infinity, integers
outside i64/u64 and `-0`, every float, duplicate keys, surrogates, a BOM, deep nesting) —
and the field decoders here refuse every value the exact field decoder would not accept
as-is. A refusal means "run the exact decoder", never an error of its own, so error texts
and positions always come from the exact path.

`Arguments` carries one document through several decodes: the C parse runs at most once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shellgate.router.decode.serde_json.cursor import I64_MIN, U64_MAX

FastDecoder = Callable[[Any], Any]
# Deeper values go to the exact path (serde_json's generic limit is 128 levels).
MAX_FAST_DEPTH: Final = 64
# An integer token longer than this is outside u64/i64 anyway (and int() of a very long
# digit string is itself slow).
_MAX_INT_CHARS: Final = 20
_SURROGATE = re.compile("[\ud800-\udfff]")


class Slow(Exception):
    """The fast path cannot vouch for this input: use the exact decoder."""


def _refuse(_text: str) -> Any:
    raise Slow


def _int(text: str) -> int:
    if len(text) > _MAX_INT_CHARS or text == "-0":
        raise Slow  # serde_json reads `-0` and out-of-range integers as floats
    value = int(text)
    if not I64_MIN <= value <= U64_MAX:
        raise Slow
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Slow  # duplicate keys: serde_json's struct and Value readers differ from this
    return out


# One decoder for every call: the C scanner keeps no state between calls that matters here
# (its key memo only interns strings).
_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_object, parse_float=_refuse, parse_int=_int, parse_constant=_refuse
)


def _has_surrogate(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if depth > MAX_FAST_DEPTH:
        return True
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v, depth + 1) for v in value)
    return False


def _too_deep(value: Any, depth: int = 1) -> bool:
    if depth > MAX_FAST_DEPTH:
        return True
    if isinstance(value, dict):
        return any(_too_deep(v, depth + 1) for v in value.values() if isinstance(v, dict | list))
    if isinstance(value, list):
        return any(_too_deep(v, depth + 1) for v in value if isinstance(v, dict | list))
    return False


def loads(text: str) -> Any:
    """The document as C `json.loads` reads it; raises `Slow` unless serde_json agrees."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        raise Slow from None
    # Pure ASCII without `\\u` escapes cannot hold a surrogate; otherwise look (lone
    # surrogates are errors for serde_json, or raw ones the exact reader passes through).
    if (not text.isascii() or "\\u" in text) and _has_surrogate(value):
        raise Slow
    return value


def loads_value(text: str) -> Any:
    """`serde_json::from_str::<Value>` when provably identical; raises `Slow` otherwise."""
    return Arguments(text).fast_value()


# What `Arguments` holds before its first fast read, and after the fast path refused.
_UNREAD: Final = object()
_REFUSED: Final = object()


@dataclass(frozen=True, slots=True)
class Arguments:
    """A tool call's arguments text, with its fast-path value parsed at most once.

    Decode builds one per call and hands it to each pass (two for shell_command, three for
    exec_command), so later passes reuse the first parse; a refusal is remembered too. The
    parsed value is shared by those passes, which only read it. A call is decoded by one
    thread, so the lazy slot needs no lock (a racing second parse would store an equal
    value anyway).
    """

    text: str
    _parsed: object = field(default=_UNREAD, init=False, repr=False, compare=False)

    def fast(self) -> Any:
        """`loads(self.text)`, parsed on first use; raises `Slow` when it refused."""
        parsed = self._parsed
        if parsed is _UNREAD:
            try:
                parsed = loads(self.text)
            except Slow:
                parsed = _REFUSED
            object.__setattr__(self, "_parsed", parsed)
        if parsed is _REFUSED:
            raise Slow
        return parsed

    def fast_value(self) -> Any:
        """`loads_value(self.text)`: the fast value, refused when nested too deep."""
        value = self.fast()
        if isinstance(value, dict | list) and _too_deep(value):
            raise Slow
        return value


# --- field decoders over values ------------------------------------------------------
def fast_string(value: Any) -> str:
    """`String`."""
    if type(value) is not str:
        raise Slow
    return value


def fast_bool(value: Any) -> bool:
    """`bool`."""
    if type(value) is not bool:
        raise Slow
    return value


def fast_int(low: int, high: int) -> FastDecoder:
    """An integer field accepting `low..=high`."""

    def decode(value: Any) -> int:
        if type(value) is not int or not low <= value <= high:
            raise Slow
        return value

    return decode


def fast_option(inner: FastDecoder) -> FastDecoder:
    """`Option<T>`: `null` is None."""

    def decode(value: Any) -> Any:
        return None if value is None else inner(value)

    return decode


def fast_null(value: Any) -> None:
    """An `Option` field whose only fast case is `null` (other values take the exact path)."""
    if value is not None:
        raise Slow


def fast_enum(variants: Sequence[str], convert: Callable[[str], Any]) -> FastDecoder:
    """A unit-variant enum given as a plain string."""
    names = frozenset(variants)

    def decode(value: Any) -> Any:
        if type(value) is not str or value not in names:
            raise Slow
        return convert(value)

    return decode


def fast_strings(value: Any) -> tuple[str, ...]:
    """`Vec<String>` as a tuple."""
    if type(value) is not list or not all(type(v) is str for v in value):
        raise Slow
    return tuple(value)


__all__ = [
    "MAX_FAST_DEPTH",
    "Arguments",
    "FastDecoder",
    "Slow",
    "fast_bool",
    "fast_enum",
    "fast_int",
    "fast_null",
    "fast_option",
    "fast_string",
    "fast_strings",
    "loads",
    "loads_value",
]
