"""serde_json-compatible JSON lexing: positions, syntax errors, numbers, strings, skipping.

The reader follows `serde_json::Deserializer<SliceRead>` step by step so that every error
carries the same text and the same `line`/`column` serde_json would report (spec 01 §5.1):
`error()` positions at the current index (the last consumed byte), `peek_error()` one byte
further (the byte being looked at). Everything here is linear in the input and iterative
where nesting is unbounded, so hostile input cannot hang or overflow the stack.
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
_DIGITS = re.compile(rb"[0-9]*")
# A string body runs until a quote, a backslash or a control byte.
_STR_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
_POW10: Final = tuple(float(f"1e{i}") for i in range(309))

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


class Reader:
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

    # --- strings -----------------------------------------------------------------------
    def parse_str(self) -> str:
        """Parse a string body (opening quote already consumed) and the closing quote."""
        data = self.data
        out = bytearray()
        while True:
            match = _STR_PLAIN.match(data, self.index)
            assert match is not None
            out += data[self.index : match.end()]
            self.index = match.end()
            if self.index >= len(data):
                raise self.error(EOF_STRING)
            byte = data[self.index]
            self.index += 1
            if byte == 0x22:  # closing quote
                return out.decode("utf-8", "surrogatepass")
            if byte != 0x5C:  # a raw control character
                raise self.error(CONTROL_CHAR)
            self._parse_escape(out)

    _SIMPLE_ESCAPES: Final = {
        0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x62: b"\b",
        0x66: b"\f", 0x6E: b"\n", 0x72: b"\r", 0x74: b"\t",
    }  # fmt: skip

    def _parse_escape(self, out: bytearray) -> None:
        ch = self.next_char()
        if ch is None:
            raise self.error(EOF_STRING)
        simple = self._SIMPLE_ESCAPES.get(ch)
        if simple is not None:
            out += simple
            return
        if ch != 0x75:  # 'u'
            raise self.error(INVALID_ESCAPE)
        n = self._hex_escape()
        if 0xDC00 <= n <= 0xDFFF:
            raise self.error(LONE_SURROGATE)
        while True:
            if n < 0xD800 or n > 0xDBFF:
                out += chr(n).encode("utf-8")
                return
            lead = n
            if self.peek() is None:
                raise self.error(EOF_STRING)
            if self.next_char() != 0x5C:
                raise self.error(HEX_END)
            if self.peek() is None:
                raise self.error(EOF_STRING)
            if self.next_char() != 0x75:
                raise self.error(HEX_END)
            trail = self._hex_escape()
            if not 0xDC00 <= trail <= 0xDFFF:
                raise self.error(LONE_SURROGATE)
            out += chr(((lead - 0xD800) << 10 | (trail - 0xDC00)) + 0x10000).encode("utf-8")
            return

    def _hex_escape(self) -> int:
        chunk = self.data[self.index : self.index + 4]
        if len(chunk) < 4:
            self.index = len(self.data)
            raise self.error(EOF_STRING)
        self.index += 4
        try:
            if not all(c in b"0123456789abcdefABCDEF" for c in chunk):
                raise ValueError
            return int(chunk, 16)
        except ValueError:
            raise self.error(INVALID_ESCAPE) from None

    # --- numbers -----------------------------------------------------------------------
    def _digit_run(self) -> bytes:
        match = _DIGITS.match(self.data, self.index)
        assert match is not None
        return self.data[self.index : match.end()]

    def parse_integer(self, positive: bool) -> Number:
        """serde_json's parse_integer (the sign, if any, already consumed)."""
        first = self.next_char()
        if first is None:
            raise self.error(EOF_VALUE)
        if first == 0x30:  # a single leading zero
            if 0x30 <= self.peek_or_null() <= 0x39:
                raise self.peek_error(INVALID_NUMBER)
            return self._parse_number(positive, 0)
        if not 0x31 <= first <= 0x39:
            raise self.error(INVALID_NUMBER)
        significand = first - 0x30
        for c in self._digit_run():
            digit = c - 0x30
            if significand * 10 + digit > U64_MAX:
                return Number("f", self._parse_long_integer(positive, significand))
            self.index += 1
            significand = significand * 10 + digit
        return self._parse_number(positive, significand)

    def _parse_number(self, positive: bool, significand: int) -> Number:
        nxt = self.peek_or_null()
        if nxt == 0x2E:
            return Number("f", self._parse_decimal(positive, significand, 0))
        if nxt in (0x65, 0x45):
            return Number("f", self._parse_exponent(positive, significand, 0))
        if positive:
            return Number("u", significand)
        if significand == 0 or -significand < I64_MIN:
            # serde_json converts `-0` and i64 underflow into a float.
            return Number("f", -float(significand))
        return Number("i", -significand)

    def _parse_long_integer(self, positive: bool, significand: int) -> float:
        exponent = len(self._digit_run())
        self.index += exponent
        nxt = self.peek_or_null()
        if nxt == 0x2E:
            return self._parse_decimal(positive, significand, exponent)
        if nxt in (0x65, 0x45):
            return self._parse_exponent(positive, significand, exponent)
        return self._f64_from_parts(positive, significand, exponent)

    def _parse_decimal(self, positive: bool, significand: int, exp_before: int) -> float:
        self.eat()  # '.'
        after = 0
        run = self._digit_run()
        for c in run:
            digit = c - 0x30
            if significand * 10 + digit > U64_MAX:
                # Further digits cannot change a u64 significand: skip them.
                self.index += len(self._digit_run())
                if self.peek_or_null() in (0x65, 0x45):
                    return self._parse_exponent(positive, significand, exp_before + after)
                return self._f64_from_parts(positive, significand, exp_before + after)
            self.index += 1
            significand = significand * 10 + digit
            after -= 1
        if after == 0:
            if self.peek() is None:
                raise self.peek_error(EOF_VALUE)
            raise self.peek_error(INVALID_NUMBER)
        if self.peek_or_null() in (0x65, 0x45):
            return self._parse_exponent(positive, significand, exp_before + after)
        return self._f64_from_parts(positive, significand, exp_before + after)

    def _parse_exponent(self, positive: bool, significand: int, starting: int) -> float:
        self.eat()  # 'e' / 'E'
        positive_exp = True
        sign = self.peek_or_null()
        if sign == 0x2B:
            self.eat()
        elif sign == 0x2D:
            self.eat()
            positive_exp = False
        first = self.next_char()
        if first is None:
            raise self.error(EOF_VALUE)
        if not 0x30 <= first <= 0x39:
            raise self.error(INVALID_NUMBER)
        exp = first - 0x30
        for c in self._digit_run():
            self.index += 1
            digit = c - 0x30
            if exp * 10 + digit > I32_MAX:
                if significand != 0 and positive_exp:
                    raise self.error(OUT_OF_RANGE)
                self.index += len(self._digit_run())
                return 0.0 if positive else -0.0
            exp = exp * 10 + digit
        final = starting + exp if positive_exp else starting - exp
        final = max(min(final, I32_MAX), I32_MIN)  # saturating, as in serde_json
        return self._f64_from_parts(positive, significand, final)

    def _f64_from_parts(self, positive: bool, significand: int, exponent: int) -> float:
        # serde_json without `float_roundtrip`: multiply/divide by a power-of-ten table.
        f = float(significand)
        while True:
            if abs(exponent) < len(_POW10):
                pow10 = _POW10[abs(exponent)]
                if exponent >= 0:
                    f *= pow10
                    if f == float("inf"):
                        raise self.error(OUT_OF_RANGE)
                else:
                    f /= pow10
                break
            if f == 0.0:
                break
            if exponent >= 0:
                raise self.error(OUT_OF_RANGE)
            f /= 1e308
            exponent += 308
        return f if positive else -f

    # --- skipping (IgnoredAny) ------------------------------------------------------------
    def _ignore_integer(self) -> None:
        first = self.next_char() or 0
        if first == 0x30:
            if 0x30 <= self.peek_or_null() <= 0x39:
                raise self.peek_error(INVALID_NUMBER)
        elif 0x31 <= first <= 0x39:
            self.index += len(self._digit_run())
        else:
            raise self.error(INVALID_NUMBER)
        nxt = self.peek_or_null()
        if nxt == 0x2E:
            self.eat()
            run = len(self._digit_run())
            if run == 0:
                raise self.peek_error(INVALID_NUMBER)
            self.index += run
            nxt = self.peek_or_null()
        if nxt in (0x65, 0x45):
            self.eat()
            if self.peek_or_null() in (0x2B, 0x2D):
                self.eat()
            digit = self.next_char() or 0
            if not 0x30 <= digit <= 0x39:
                raise self.error(INVALID_NUMBER)
            self.index += len(self._digit_run())

    def ignore_value(self) -> None:
        """serde_json's ignore_value: validate and skip one value, iteratively (no depth limit)."""
        stack = bytearray()
        while True:
            peek = self.parse_whitespace()
            if peek is None:
                raise self.peek_error(EOF_VALUE)
            frame: int | None = None
            if peek == 0x6E:
                self.eat()
                self.parse_ident(b"ull")
            elif peek == 0x74:
                self.eat()
                self.parse_ident(b"rue")
            elif peek == 0x66:
                self.eat()
                self.parse_ident(b"alse")
            elif peek == 0x2D:
                self.eat()
                self._ignore_integer()
            elif 0x30 <= peek <= 0x39:
                self._ignore_integer()
            elif peek == 0x22:
                self.eat()
                self.parse_str()
            elif peek in (0x5B, 0x7B):
                self.eat()
                frame = peek
            else:
                raise self.peek_error(EXPECTED_VALUE)
            if frame is not None:
                accept_comma = False
            elif stack:
                frame = stack.pop()
                accept_comma = True
            else:
                return
            while True:
                nxt = self.parse_whitespace()
                if nxt == 0x2C and accept_comma:
                    self.eat()
                    break
                if (nxt == 0x5D and frame == 0x5B) or (nxt == 0x7D and frame == 0x7B):
                    self.eat()
                    if not stack:
                        return
                    frame = stack.pop()
                    accept_comma = True
                    continue
                if nxt is None:
                    raise self.peek_error(EOF_LIST if frame == 0x5B else EOF_OBJECT)
                if accept_comma:
                    raise self.peek_error(
                        EXPECTED_LIST_COMMA if frame == 0x5B else EXPECTED_OBJECT_COMMA
                    )
                break
            if frame == 0x7B:
                nxt = self.parse_whitespace()
                if nxt is None:
                    raise self.peek_error(EOF_OBJECT)
                if nxt != 0x22:
                    raise self.peek_error(KEY_NOT_STRING)
                self.eat()
                self.parse_str()
                nxt = self.parse_whitespace()
                if nxt is None:
                    raise self.peek_error(EOF_OBJECT)
                if nxt != 0x3A:
                    raise self.peek_error(EXPECTED_COLON)
                self.eat()
            stack.append(frame)
