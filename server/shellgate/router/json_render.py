"""Rendering of serde `Unexpected` values: floats (`{}` of f64) and Rust `{:?}` strings."""

from __future__ import annotations

import unicodedata
from decimal import Decimal
from typing import Final


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
