"""Rendering of serde `Unexpected` floats (`{}` of f64); strings use `rust_text.debug_str`."""

from __future__ import annotations

from decimal import Decimal


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
