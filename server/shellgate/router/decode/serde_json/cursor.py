"""serde_json-compatible JSON cursor: error texts, positions, byte access, recursion depth.

`error()` positions at the current index (the last consumed byte), `peek_error()` one byte
further (the byte being looked at), exactly as serde_json's SliceRead does (spec 01 §5.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

# serde_json's default `remaining_depth` for typed/generic values (not for skipped values).
RECURSION_LIMIT: Final = 128
U64_MAX: Final = (1 << 64) - 1
I32_MIN: Final = -(1 << 31)
I32_MAX: Final = (1 << 31) - 1
I64_MIN: Final = -(1 << 63)

_WS = frozenset(b" \n\t\r")
_WS_RUN = re.compile(rb"[ \n\t\r]*")
DIGITS = re.compile(rb"[0-9]*")
# A string body runs until a quote, a backslash or a control byte.
STR_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
POW10: Final = tuple(float(f"1e{i}") for i in range(309))

EOF_VALUE: Final = "EOF while parsing a value"
EOF_LIST: Final = "EOF while parsing a list"
EOF_OBJECT: Final = "EOF while parsing an object"
EOF_STRING: Final = "EOF while parsing a string"
EXPECTED_COLON: Final = "expected `:`"
EXPECTED_LIST_COMMA: Final = "expected `,` or `]`"
EXPECTED_OBJECT_COMMA: Final = "expected `,` or `}`"
EXPECTED_IDENT: Final = "expected ident"
EXPECTED_VALUE: Final = "expected value"
INVALID_ESCAPE: Final = "invalid escape"
INVALID_NUMBER: Final = "invalid number"
OUT_OF_RANGE: Final = "number out of range"
CONTROL_CHAR: Final = "control character (\\u0000-\\u001F) found while parsing a string"
KEY_NOT_STRING: Final = "key must be a string"
LONE_SURROGATE: Final = "lone leading surrogate in hex escape"
TRAILING_COMMA: Final = "trailing comma"
TRAILING_CHARS: Final = "trailing characters"
HEX_END: Final = "unexpected end of hex escape"
RECURSION: Final = "recursion limit exceeded"


class JsonError(Exception):
    """A serde_json error: message plus an optional (line, column) position."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    @property
    def positioned(self) -> bool:
        """serde_json uses line 0 for 'no position yet'."""
        return self.line != 0

    def render(self) -> str:
        """serde_json's Display: `{msg} at line {L} column {C}` when positioned."""
        if self.line == 0:
            return self.message
        return f"{self.message} at line {self.line} column {self.column}"


@dataclass(frozen=True, slots=True)
class Number:
    """serde_json's ParserNumber: kind `u` (u64), `i` (negative i64) or `f` (f64)."""

    kind: str
    value: int | float


class Cursor:
    """A cursor over the UTF-8 bytes of one JSON document."""

    def __init__(self, text: str) -> None:
        # Rust strings cannot hold lone surrogates; keep them as bytes rather than crash.
        self.data: bytes = text.encode("utf-8", "surrogatepass")
        self.index = 0
        self.remaining_depth = RECURSION_LIMIT

    # --- positions -------------------------------------------------------------------
    def _position(self, i: int) -> tuple[int, int]:
        start = self.data.rfind(b"\n", 0, i) + 1
        return 1 + self.data.count(b"\n", 0, start), i - start

    def error(self, message: str) -> JsonError:
        """An error positioned at the last consumed byte."""
        line, column = self._position(self.index)
        return JsonError(message, line, column)

    def peek_error(self, message: str) -> JsonError:
        """An error positioned at the byte being peeked."""
        line, column = self._position(min(len(self.data), self.index + 1))
        return JsonError(message, line, column)

    def fix(self, err: JsonError) -> JsonError:
        """serde_json's fix_position: give an unpositioned error the current position."""
        if err.positioned:
            return err
        line, column = self._position(self.index)
        return JsonError(err.message, line, column)

    # --- bytes -----------------------------------------------------------------------
    def peek(self) -> int | None:
        """The next byte, not consumed."""
        return self.data[self.index] if self.index < len(self.data) else None

    def peek_or_null(self) -> int:
        """The next byte or 0 at the end."""
        return self.data[self.index] if self.index < len(self.data) else 0

    def eat(self) -> None:
        """Consume one byte."""
        self.index += 1

    def next_char(self) -> int | None:
        """Consume and return one byte."""
        if self.index >= len(self.data):
            return None
        self.index += 1
        return self.data[self.index - 1]

    def parse_whitespace(self) -> int | None:
        """Skip JSON whitespace; the next byte (not consumed) or None at the end."""
        match = _WS_RUN.match(self.data, self.index)
        assert match is not None  # `*` always matches
        self.index = match.end()
        return self.peek()

    def parse_ident(self, rest: bytes) -> None:
        """Consume the rest of `null`/`true`/`false`."""
        for expected in rest:
            got = self.next_char()
            if got is None:
                raise self.error(EOF_VALUE)
            if got != expected:
                raise self.error(EXPECTED_IDENT)

    def end(self) -> None:
        """Only whitespace may follow the top-level value."""
        if self.parse_whitespace() is not None:
            raise self.peek_error(TRAILING_CHARS)

    # --- recursion ---------------------------------------------------------------------
    def enter(self) -> None:
        """serde_json's check_recursion: error at the 128th nested typed container."""
        self.remaining_depth -= 1
        if self.remaining_depth == 0:
            raise self.peek_error(RECURSION)

    def leave(self) -> None:
        """Undo `enter` after a container is done."""
        self.remaining_depth += 1
