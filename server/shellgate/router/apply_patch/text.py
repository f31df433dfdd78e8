"""Rust-compatible string helpers: `trim`, `lines` and friends as Codex's parser sees text."""

from __future__ import annotations

# Rust's `char::is_whitespace` (Unicode White_Space). Python's `str.strip()` also strips
# U+001C..U+001F, which Rust keeps; the parser must agree with Codex byte for byte.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def rust_trim(text: str) -> str:
    """`str::trim`: strip Unicode White_Space on both sides."""
    return text.strip(RUST_WHITESPACE)


def rust_trim_end(text: str) -> str:
    """`str::trim_end`: strip Unicode White_Space on the right."""
    return text.rstrip(RUST_WHITESPACE)


def rust_lines(text: str) -> list[str]:
    """`str::lines`: split on `\\n`, drop one `\\r` before it, no trailing empty line."""
    if not text:
        return []
    pieces = text.split("\n")
    if text.endswith("\n"):
        pieces.pop()
        return [p[:-1] if p.endswith("\r") else p for p in pieces]
    # The last piece had no `\n`, so a `\r` at its end is content, not a line ending.
    head = [p[:-1] if p.endswith("\r") else p for p in pieces[:-1]]
    return [*head, pieces[-1]]
