"""Shell word splitting and joining with Rust `shlex` 1.3 semantics (spec 03 §D.4)."""

from __future__ import annotations

from collections.abc import Sequence

_UNQUOTED = 1
_SINGLE = 2
_DOUBLE = 4
# Bytes that may stand unquoted (shlex 1.3 `quoting_strategy`).
_UNQUOTED_OK = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-./:@]_")


class ShlexJoinError(ValueError):
    """A word cannot be quoted (it contains a NUL byte)."""


def shlex_split(text: str) -> list[str] | None:
    """Split like Rust `shlex::split`; None on an unterminated quote or trailing backslash."""
    words: list[str] = []
    i, n = 0, len(text)
    while True:
        # Between words: skip blanks; `#` starts a comment up to the end of the line.
        while i < n and text[i] in " \t\n":
            i += 1
        if i >= n:
            return words
        if text[i] == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        word: list[str] = []
        while i < n and text[i] not in " \t\n":
            ch = text[i]
            i += 1
            if ch == "\\":
                if i >= n:
                    return None
                if text[i] != "\n":
                    word.append(text[i])
                i += 1
            elif ch == "'":
                end = text.find("'", i)
                if end < 0:
                    return None
                word.append(text[i:end])
                i = end + 1
            elif ch == '"':
                while True:
                    if i >= n:
                        return None
                    c = text[i]
                    i += 1
                    if c == '"':
                        break
                    if c == "\\":
                        if i >= n:
                            return None
                        nxt = text[i]
                        i += 1
                        if nxt in '$`"\\':
                            word.append(nxt)
                        elif nxt != "\n":
                            word.append("\\" + nxt)
                    else:
                        word.append(c)
            else:
                word.append(ch)
        words.append("".join(word))


def _strategy(data: bytes) -> tuple[int, int]:
    """Length of the next chunk and its best quoting style."""
    if data.startswith(b"^"):
        prev_ok, i = _SINGLE, 1
    else:
        prev_ok, i = _UNQUOTED | _SINGLE | _DOUBLE, 0
    while i < len(data):
        c = data[i]
        cur_ok = prev_ok
        if c >= 0x80 or c not in _UNQUOTED_OK:
            cur_ok &= ~_UNQUOTED
        if c in b"'\\^":
            cur_ok &= ~_SINGLE
        if c in b"`$!^":
            cur_ok &= ~_DOUBLE
        if cur_ok == 0:
            break
        prev_ok = cur_ok
        i += 1
    if prev_ok & _UNQUOTED:
        return i, _UNQUOTED
    if prev_ok & _SINGLE:
        return i, _SINGLE
    return i, _DOUBLE


def shlex_quote(word: str) -> str:
    """Quote one word like shlex 1.3 `try_quote`; raises ShlexJoinError on NUL."""
    data = word.encode("utf-8", "surrogatepass")
    if not data:
        return "''"
    if b"\0" in data:
        raise ShlexJoinError("word contains a NUL byte")
    out = bytearray()
    while data:
        length, style = _strategy(data)
        chunk, data = data[:length], data[length:]
        if style == _UNQUOTED:
            out += chunk
        elif style == _SINGLE:
            out += b"'" + chunk + b"'"
        else:
            out += b'"'
            for c in chunk:
                if c in b'"\\$`':
                    out.append(0x5C)
                out.append(c)
            out += b'"'
    return out.decode("utf-8", "surrogatepass")


def shlex_join(words: Sequence[str]) -> str:
    """Join words like shlex 1.3 `try_join`; raises ShlexJoinError on NUL."""
    return " ".join(shlex_quote(w) for w in words)


def join_for_display(words: Sequence[str]) -> str:
    """shlex_join, or the space-joined words when joining fails (reason texts)."""
    try:
        return shlex_join(words)
    except ShlexJoinError:
        return " ".join(words)
