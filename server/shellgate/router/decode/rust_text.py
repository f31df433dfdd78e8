"""Rust's `{:?}` rendering of a str, shared by every message that quotes one like Codex does.

Used by serde's `Unexpected` strings (json decode), the exec-policy match rendering and the
unified-exec rejection text; one definition so the escapes agree everywhere.
"""

from __future__ import annotations

import unicodedata
from typing import Final

__all__ = ["debug_str"]

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
