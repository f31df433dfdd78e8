"""`seek_sequence`: find patch lines in a file with decreasing strictness (spec 02 §7.3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shellgate.router.apply_patch.text import rust_trim, rust_trim_end

# Typographic punctuation that models usually type as ASCII.
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys(
            ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212"], "-"
        ),
        **dict.fromkeys(["\u2018", "\u2019", "\u201a", "\u201b"], "'"),
        **dict.fromkeys(["\u201c", "\u201d", "\u201e", "\u201f"], '"'),
        **dict.fromkeys(
            [
                "\u00a0",
                "\u2002",
                "\u2003",
                "\u2004",
                "\u2005",
                "\u2006",
                "\u2007",
                "\u2008",
                "\u2009",
                "\u200a",
                "\u202f",
                "\u205f",
                "\u3000",
            ],
            " ",
        ),
    }
)


def normalise_punctuation(line: str) -> str:
    """Trim and map Unicode dashes, quotes and odd spaces to ASCII (the last fuzz level)."""
    return rust_trim(line).translate(_PUNCTUATION)


def _identity(line: str) -> str:
    return line


_LEVELS: tuple[Callable[[str], str], ...] = (
    _identity,
    rust_trim_end,
    rust_trim,
    normalise_punctuation,
)


def seek_sequence(
    lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool
) -> int | None:
    """Index where `pattern` occurs in `lines` at or after `start`, else None.

    End-of-file patterns try the last possible position first, then search from `start`.
    """
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    if eof:
        found = _search(lines, pattern, last, last)
        if found is not None:
            return found
    return _search(lines, pattern, start, last)


def _search(lines: Sequence[str], pattern: Sequence[str], first: int, last: int) -> int | None:
    for level in _LEVELS:
        wanted = [level(p) for p in pattern]
        for i in range(first, last + 1):
            if all(level(lines[i + k]) == wanted[k] for k in range(len(wanted))):
                return i
    return None
