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


def has_lone_surrogate(value: object) -> bool:
    """Whether a string holds a lone surrogate (a Rust string never does; only a JSON
    `\\uD8xx` escape read by a lenient decoder puts one there)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refuse_lone_surrogates(item: object) -> None:
    """ValueError when an output item holds a lone surrogate outside `arguments`.

    serde_json refuses a lone `\\ud800` escape, so Codex drops such an item whole.
    `arguments` is the exception: its own serde_json parse reports the escape as the tool
    error the model sees (`serde_json.reader.Reader._reject_raw_surrogate`).
    """
    if isinstance(item, dict) and any(
        has_lone_surrogate(k) or (k != "arguments" and has_lone_surrogate(v))
        for k, v in item.items()
    ):
        raise ValueError("lone surrogate")
