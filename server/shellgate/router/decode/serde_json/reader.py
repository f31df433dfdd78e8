"""serde_json-compatible JSON reader: strings, escapes, and skipping of ignored values.

The reader follows `serde_json::Deserializer<SliceRead>` step by step so that every error
carries the same text and the same `line`/`column` serde_json would report (spec 01 §5.1).
Everything here is linear in the input and iterative where nesting is unbounded, so hostile
input cannot hang or overflow the stack.
"""

from __future__ import annotations

import re
from typing import Final

from shellgate.router.decode.serde_json.cursor import (
    CONTROL_CHAR,
    EOF_LIST,
    EOF_OBJECT,
    EOF_STRING,
    EOF_VALUE,
    EXPECTED_COLON,
    EXPECTED_LIST_COMMA,
    EXPECTED_OBJECT_COMMA,
    EXPECTED_VALUE,
    HEX_END,
    INVALID_ESCAPE,
    KEY_NOT_STRING,
    LONE_SURROGATE,
    STR_PLAIN,
)
from shellgate.router.decode.serde_json.numbers import NumberReader

# A lone surrogate as `Cursor` encodes it (UTF-8 with surrogatepass): a lead D800-DBFF is
# ED A0-AF xx, a trail DC00-DFFF is ED B0-BF xx. A Rust `&str` cannot hold one, so the
# text reached shellgate only because a JSON decoder in front (the item's own) let a
# `\ud800` escape through; serde_json would have stopped at that escape.
_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")


class Reader(NumberReader):
    """A serde_json SliceRead deserializer state over one document."""

    # --- strings -----------------------------------------------------------------------
    def parse_str(self) -> str:
        """Parse a string body (opening quote already consumed) and the closing quote."""
        data = self.data
        out = bytearray()
        while True:
            match = STR_PLAIN.match(data, self.index)
            assert match is not None
            if 0xED in data[self.index : match.end()]:
                self._reject_raw_surrogate(match.end())
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

    def _reject_raw_surrogate(self, end: int) -> None:
        """serde_json's error for the escape a raw lone surrogate in `[index, end)` came from.

        The surrogate is judged as the `\\uXXXX` escape it was: a lead one is
        "unexpected end of hex escape", a trailing one "lone leading surrogate in hex
        escape" (serde_json's own texts), positioned just after the surrogate.
        """
        found = _RAW_SURROGATE.search(self.data, self.index, end)
        if found is None:
            return
        self.index = found.end()
        raise self.error(HEX_END if found.group()[1] < 0xB0 else LONE_SURROGATE)

    def ignore_str(self) -> None:
        """serde_json's ignore_str: skip a string body without decoding it.

        Unlike `parse_str`, a raw control byte is reported *before* it is consumed and `\\u`
        escapes are not checked for surrogate pairing (an ignored value may be any string).
        """
        data = self.data
        while True:
            match = STR_PLAIN.match(data, self.index)
            assert match is not None
            self.index = match.end()
            if self.index >= len(data):
                raise self.error(EOF_STRING)
            byte = data[self.index]
            if byte == 0x22:
                self.index += 1
                return
            if byte != 0x5C:
                raise self.error(CONTROL_CHAR)
            self.index += 1
            ch = self.next_char()
            if ch is None:
                raise self.error(EOF_STRING)
            if ch == 0x75:
                self._hex_escape()
            elif ch not in self._SIMPLE_ESCAPES:
                raise self.error(INVALID_ESCAPE)

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

    # --- skipping (IgnoredAny) ------------------------------------------------------------
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
                self.ignore_integer()
            elif 0x30 <= peek <= 0x39:
                self.ignore_integer()
            elif peek == 0x22:
                self.eat()
                self.ignore_str()
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
                self.ignore_str()
                nxt = self.parse_whitespace()
                if nxt is None:
                    raise self.peek_error(EOF_OBJECT)
                if nxt != 0x3A:
                    raise self.peek_error(EXPECTED_COLON)
                self.eat()
            stack.append(frame)
