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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
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


# The last document read (text object, value): the decode passes of one tool call (two for
# shell_command, three for exec_command) read the same arguments string one after another.
_last: tuple[str, Any] | None = None


def loads(text: str) -> Any:
    """The document as C `json.loads` reads it; raises `Slow` unless serde_json agrees.

    The value is shared with later calls on the same text object: callers only read it.
    """
    global _last
    last = _last
    if last is not None and last[0] is text:
        return last[1]
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        raise Slow from None
    # Pure ASCII without `\\u` escapes cannot hold a surrogate; otherwise look (lone
    # surrogates are errors for serde_json, or raw ones the exact reader passes through).
    if (not text.isascii() or "\\u" in text) and _has_surrogate(value):
        raise Slow
    _last = (text, value)
    return value


def loads_value(text: str) -> Any:
    """`serde_json::from_str::<Value>` when provably identical; raises `Slow` otherwise."""
    value = loads(text)
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
