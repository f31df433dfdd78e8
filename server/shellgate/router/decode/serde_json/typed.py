"""serde-style typed JSON decoding with serde_json's exact error texts and positions.

Public API:

* `StructSpec` / `Field` describe a `#[derive(Deserialize)]` struct; `decode_struct(source,
  spec)` runs `serde_json::from_str` for it and returns a `StructResult` (fields present,
  unknown top level keys in document order) or raises `JsonError` (render with `.render()`).
  `source` is the text, or an `Arguments` that several decodes of one text share.
* Field decoders (`de_string`, `de_bool`, `de_int`, `de_option`, `de_seq`, `de_enum`,
  `de_value`, `de_struct`) take a `Reader` and return the Python value; they are the building
  blocks for the tool argument records of `decode.py`.
* `parse_value(source)` is `serde_json::from_str::<Value>` (recursion limit 128).
* `format_float` / `debug_str` render serde's `Unexpected` values.

Errors without a position are positioned by the nearest enclosing value decoder, exactly as
serde_json's `fix_position` does. `ProductError` (shellgate's own texts) is never positioned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from shellgate.router.decode.rust_text import debug_str
from shellgate.router.decode.serde_json.cursor import JsonError
from shellgate.router.decode.serde_json.fast import Arguments, FastDecoder, Slow
from shellgate.router.decode.serde_json.reader import Reader
from shellgate.router.decode.serde_json.render import format_float
from shellgate.router.decode.serde_json.values import (
    MISSING,
    Decoder,
    ProductError,
    container,
    de_bool,
    de_enum,
    de_int,
    de_option,
    de_seq,
    de_string,
    de_value,
    invalid_type,
    next_element,
    next_key,
    object_colon,
    parse_value,
    peek_invalid_type,
    peek_value,
)

__all__ = [
    "MISSING",
    "Arguments",
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
    # The same decoder over an already parsed value (json_fast); None: exact path only.
    fast: FastDecoder | None = None

    def __post_init__(self) -> None:
        if self.default is not None and self.default is not MISSING:
            object.__setattr__(self, "seq_default", True)


@dataclass(frozen=True)
class StructSpec:
    """A `#[derive(Deserialize)]` struct."""

    name: str
    fields: tuple[Field, ...]

    @cached_property
    def fast_index(self) -> dict[str, Field] | None:
        """Field by key (name or alias) when every field has a fast decoder, else None."""
        if any(f.fast is None for f in self.fields):
            return None
        return {k: f for f in reversed(self.fields) for k in (f.name, *f.aliases)}

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
    while (key := next_key(r, first)) is not None:
        first = False
        f = spec.lookup(key)
        if f is None:
            unknown.append(key)
            object_colon(r)
            r.ignore_value()
            continue
        if f.name in seen:
            raise JsonError(f"duplicate field `{f.name}`")
        object_colon(r)
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
        if next_element(r, i == 0):
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
            result: StructResult = container(
                r, 0x5B, f"struct {spec.name}", lambda: _visit_seq(r, spec)
            )
            return result
        result = container(r, 0x7B, f"struct {spec.name}", lambda: _visit_map(r, spec))
        return result

    return decode


def _fast_struct(source: Arguments, spec: StructSpec) -> StructResult | None:
    """The object form through json_fast; None whenever only the exact path can answer."""
    index = spec.fast_index
    if index is None:
        return None
    try:
        value = source.fast()
        if type(value) is not dict:
            return None
        seen: dict[str, Any] = {}
        unknown: list[str] = []
        for key, item in value.items():
            f = index.get(key)
            if f is None:
                unknown.append(key)
            elif f.name in seen:
                return None  # a name and its alias: serde's duplicate-field error
            else:
                assert f.fast is not None
                seen[f.name] = f.fast(item)
    except Slow:
        return None
    values: dict[str, Any] = {}
    for f in spec.fields:
        if f.name in seen:
            values[f.name] = seen[f.name]
        elif f.default is MISSING:
            return None
        else:
            values[f.name] = f.default
    return StructResult(values, unknown)


def decode_struct(source: str | Arguments, spec: StructSpec) -> StructResult:
    """`serde_json::from_str::<spec>(text)`; raises JsonError or ProductError."""
    if isinstance(source, str):
        source = Arguments(source)
    fast = _fast_struct(source, spec)
    if fast is not None:
        return fast
    r = Reader(source.text)
    result = de_struct(spec)(r)
    r.end()
    return result
