"""Texts of the operator's view made honest: hidden characters shown, clips marked, patches listed.

`visible` escapes every character a person cannot see or that reorders what they see
(control characters but tab and newline, format characters such as the bidirectional
overrides U+202A–U+202E and isolates U+2066–U+2069, zero-width U+200B–U+200F, U+FEFF,
line/paragraph separators, non-space blanks, private-use, surrogate and unassigned code
points) as `\\u202e`-style text, so `echo ok '<U+202E>' ; touch x ;#` reads as what runs.
`hidden_names` says which were found (the view's `hidden_characters` warning).
`patch_files` / `patch_diff` give an apply_patch's paths with their change kind and its
diff, bounded with a visible mark (`… [N more characters]`).
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

from shellgate.router.apply_patch.verify import (
    AddChange,
    ApplyPatchAction,
    DeleteChange,
    UpdateChange,
)

__all__ = ["MAX_DIFF_CHARS", "clip_marked", "hidden_names", "patch_diff", "patch_files", "visible"]

# The whole diff of a patch in the view: enough for a person to read, bounded for the store.
MAX_DIFF_CHARS = 20_000
_KEPT = frozenset("\t\n ")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"})


def _hidden(char: str) -> bool:
    return char not in _KEPT and unicodedata.category(char) in _HIDDEN_CATEGORIES


def _escape(char: str) -> str:
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def visible(text: str) -> str:
    """`text` with every invisible or reordering character escaped (`\\u202e`)."""
    if not any(_hidden(c) for c in text):
        return text
    return "".join(_escape(c) if _hidden(c) else c for c in text)


def hidden_names(texts: Iterable[str]) -> tuple[str, ...]:
    """Each hidden character found in `texts`, once, as `U+202E RIGHT-TO-LEFT OVERRIDE`."""
    found: dict[str, None] = {}
    for text in texts:
        for char in text:
            if _hidden(char):
                name = unicodedata.name(char, unicodedata.category(char))
                found[f"U+{ord(char):04X} {name}"] = None
    return tuple(found)


def clip_marked(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the cut marked `… [N more characters]`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def patch_files(action: ApplyPatchAction) -> tuple[str, ...]:
    """One line per changed file: `add PATH`, `update PATH`, `delete PATH`, `move PATH -> TO`."""
    lines = []
    for change in action.changes:
        if isinstance(change, AddChange):
            lines.append(f"add {change.path}")
        elif isinstance(change, DeleteChange):
            lines.append(f"delete {change.path}")
        elif isinstance(change, UpdateChange) and change.move_path:
            lines.append(f"move {change.path} -> {change.move_path}")
        else:
            lines.append(f"update {change.path}")
    return tuple(lines)


def patch_diff(action: ApplyPatchAction, limit: int = MAX_DIFF_CHARS) -> str:
    """The patch's effect as a unified diff of each file, clipped with a mark at `limit`."""
    parts: list[str] = []
    for change in action.changes:
        if isinstance(change, AddChange):
            old, new, a, b = "", change.content, "/dev/null", change.path
        elif isinstance(change, DeleteChange):
            old, new, a, b = change.content, "", change.path, "/dev/null"
        else:
            old, new = change.old_content, change.new_content
            a, b = change.path, change.move_path or change.path
        lines = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), a, b
        )
        parts.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
        if not old and not new:
            parts.append(f"--- {a}\n+++ {b}\n(empty file)\n")
    return clip_marked("".join(parts), limit)
