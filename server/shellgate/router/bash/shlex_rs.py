"""Shell word splitting and quoting with Rust `shlex` 1.3 semantics (spec 03 §D.4)."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "NUL_JOIN_PLACEHOLDER",
    "ShlexJoinError",
    "join_for_display",
    "shlex_join",
    "shlex_join_strict",
    "shlex_quote",
    "shlex_split",
    "try_join",
    "try_quote",
]

NUL_JOIN_PLACEHOLDER = "<command included NUL byte>"

_BLANKS = frozenset(" \t\n")
_DQ_ESCAPABLE = frozenset('$`"\\')
_UNQUOTED_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-./:@]_")

# A word made only of _UNQUOTED_SAFE characters is its own quoting (one unquoted chunk).
_ALL_SAFE = re.compile(r"[A-Za-z0-9+\-./:@\]_]+")

_UNQUOTED = 1
_SINGLE = 2
_DOUBLE = 4


class _Splitter:
    """A cursor over the input; every loop advances it, so splitting is linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def next_char(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def skip_to_word(self) -> str | None:
        """The first character of the next word, skipping blanks and comments."""
        ch = self.next_char()
        while ch is not None:
            if ch == "#":
                # A comment runs to the end of the line (only between words).
                newline = self.text.find("\n", self.pos)
                self.pos = len(self.text) if newline == -1 else newline + 1
            elif ch not in _BLANKS:
                return ch
            ch = self.next_char()
        return None

    def word(self, first: str) -> list[str] | None:
        """The rest of one word, None on an unterminated quote or trailing backslash."""
        out: list[str] = []
        ch: str | None = first
        while ch is not None:
            if ch == '"':
                if not self.double(out):
                    return None
            elif ch == "'":
                end = self.text.find("'", self.pos)
                if end == -1:
                    return None
                out.append(self.text[self.pos : end])
                self.pos = end + 1
            elif ch == "\\":
                escaped = self.next_char()
                if escaped is None:
                    return None
                if escaped != "\n":
                    out.append(escaped)
            elif ch in _BLANKS:
                break
            else:
                out.append(ch)
            ch = self.next_char()
        return out

    def double(self, out: list[str]) -> bool:
        while True:
            ch = self.next_char()
            if ch is None:
                return False
            if ch == '"':
                return True
            if ch != "\\":
                out.append(ch)
                continue
            escaped = self.next_char()
            if escaped is None:
                return False
            if escaped in _DQ_ESCAPABLE:
                out.append(escaped)
            elif escaped != "\n":
                # Before any other character the backslash is kept.
                out.append("\\" + escaped)


def shlex_split(text: str) -> list[str] | None:
    """Split like Rust `shlex::split`; None on an unterminated quote or trailing `\\`."""
    splitter = _Splitter(text)
    words: list[str] = []
    while True:
        first = splitter.skip_to_word()
        if first is None:
            return words
        word = splitter.word(first)
        if word is None:
            return None
        words.append("".join(word))


def _chunk(word: str, start: int) -> tuple[int, int]:
    """(end, style) of the quoting chunk starting at `start`."""
    allowed = _UNQUOTED | _SINGLE | _DOUBLE
    index = start
    if word[start] == "^":
        # A leading `^` would be history substitution in some shells: single quotes only.
        allowed = _SINGLE
        index += 1
    while index < len(word):
        ch = word[index]
        current = allowed
        if ch not in _UNQUOTED_SAFE:
            current &= ~_UNQUOTED
        if ch in ("'", "\\", "^"):
            current &= ~_SINGLE
        if ch in ("`", "$", "!", "^"):
            current &= ~_DOUBLE
        if current == 0:
            break
        allowed = current
        index += 1
    for style in (_UNQUOTED, _SINGLE, _DOUBLE):
        if allowed & style:
            return index, style
    raise AssertionError("a quoting chunk always keeps one style")


def try_quote(word: str) -> str | None:
    """Quote one word like Rust `shlex::try_quote`; None when it contains NUL."""
    if not word:
        return "''"
    if _ALL_SAFE.fullmatch(word):
        return word
    if "\0" in word:
        return None
    parts: list[str] = []
    start = 0
    while start < len(word):
        end, style = _chunk(word, start)
        chunk = word[start:end]
        if style == _UNQUOTED:
            parts.append(chunk)
        elif style == _SINGLE:
            parts.append(f"'{chunk}'")
        else:
            escaped = "".join("\\" + ch if ch in _DQ_ESCAPABLE else ch for ch in chunk)
            parts.append(f'"{escaped}"')
        start = end
    return "".join(parts)


def try_join(words: Iterable[str]) -> str | None:
    """Quote and join words like Rust `shlex::try_join`; None when a word contains NUL."""
    quoted: list[str] = []
    for word in words:
        one = try_quote(word)
        if one is None:
            return None
        quoted.append(one)
    return " ".join(quoted)


def shlex_join(words: Iterable[str]) -> str:
    """Codex's display join: `try_join`, or a placeholder when a word contains NUL."""
    joined = try_join(words)
    return NUL_JOIN_PLACEHOLDER if joined is None else joined


class ShlexJoinError(ValueError):
    """A word cannot be quoted (it contains a NUL byte)."""


def shlex_quote(word: str) -> str:
    """Quote one word like shlex 1.3 `try_quote`; raises ShlexJoinError on NUL."""
    quoted = try_quote(word)
    if quoted is None:
        raise ShlexJoinError("word contains a NUL byte")
    return quoted


def shlex_join_strict(words: Iterable[str]) -> str:
    """Join words like shlex 1.3 `try_join`; raises ShlexJoinError on NUL."""
    joined = try_join(words)
    if joined is None:
        raise ShlexJoinError("word contains a NUL byte")
    return joined


def join_for_display(words: Iterable[str]) -> str:
    """`{cmd}` of reason texts: shlex-joined, or space-joined when joining fails (NUL)."""
    items = list(words)
    joined = try_join(items)
    return " ".join(items) if joined is None else joined
