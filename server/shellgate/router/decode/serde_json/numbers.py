"""serde_json number parsing (without `float_roundtrip`) and number skipping."""

from __future__ import annotations

from shellgate.router.decode.serde_json.cursor import (
    DIGITS,
    EOF_VALUE,
    I32_MAX,
    I32_MIN,
    I64_MIN,
    INVALID_NUMBER,
    OUT_OF_RANGE,
    POW10,
    U64_MAX,
    Cursor,
    Number,
)


class NumberReader(Cursor):
    """Cursor plus serde_json's number grammar."""

    def _digit_run(self) -> bytes:
        match = DIGITS.match(self.data, self.index)
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
            if abs(exponent) < len(POW10):
                pow10 = POW10[abs(exponent)]
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
    def ignore_integer(self) -> None:
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
