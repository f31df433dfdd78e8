"""Tokenizer for the Starlark subset of `.rules` files."""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.policy.rules_errors import Span

MAX_NESTING = 64
MAX_TOKENS = 1_000_000


class SyntaxProblem(Exception):
    """A parse error at a span (converted to RulesLoadError by the loader)."""

    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


@dataclass(frozen=True)
class Token:
    """One lexical token; `kind` is name, string, fstring, int, op, newline, indent or eof."""

    kind: str
    value: str
    span: Span
    number: int = 0


_OPS = ("==", "!=", "<=", ">=", "+=", "**", "//", *"()[]{},=+:;.-*/%<>|&")
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\n": "",
}


def tokenize(source: str) -> list[Token]:
    """Split `source` into tokens; newlines inside brackets are insignificant."""
    tokens: list[Token] = []
    i, line, col, depth, n = 0, 1, 1, 0, len(source)
    at_line_start = True

    def span_to(j: int, end_line: int, end_col: int, start: tuple[int, int]) -> Span:
        return Span(start[0], start[1], end_line, end_col)

    while i < n:
        if len(tokens) > MAX_TOKENS:
            raise SyntaxProblem("Parse error: file too large", Span(line, col, line, col + 1))
        ch = source[i]
        if at_line_start and depth == 0:
            j = i
            while j < n and source[j] in " \t":
                j += 1
            if j < n and source[j] not in "\n#" and j > i and not source.startswith("\\\n", j):
                raise SyntaxProblem(
                    "Parse error: unexpected new indentation block, expected expression",
                    Span(line, 1, line, 1 + (j - i)),
                )
            at_line_start = False
        if ch == "\n":
            if depth == 0 and tokens and tokens[-1].kind != "newline":
                tokens.append(Token("newline", "\n", Span(line, col, line, col + 1)))
            i, line, col, at_line_start = i + 1, line + 1, 1, True
            continue
        if ch in " \t\r":
            i, col = i + 1, col + 1
            continue
        if ch == "\\" and source.startswith("\\\n", i):
            i, line, col = i + 2, line + 1, 1
            continue
        if ch == "#":
            while i < n and source[i] != "\n":
                i += 1
            continue
        start = (line, col)
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (source[j].isalnum() or source[j] == "_"):
                j += 1
            word = source[i:j]
            if j < n and source[j] in "'\"" and word.lower() in ("r", "f", "rf", "fr"):
                i, line, col = _string(source, i, j, line, col, word.lower(), tokens)
                continue
            tokens.append(Token("name", word, Span(line, col, line, col + (j - i))))
            col += j - i
            i = j
            continue
        if ch in "'\"":
            i, line, col = _string(source, i, i, line, col, "", tokens)
            continue
        if ch.isdigit():
            j = i
            while j < n and (source[j].isalnum() or source[j] == "_"):
                j += 1
            text = source[i:j]
            try:
                value = int(text, 0)
            except ValueError:
                raise SyntaxProblem(
                    f"Parse error: invalid integer literal `{text}`",
                    Span(line, col, line, col + (j - i)),
                ) from None
            tokens.append(Token("int", text, Span(line, col, line, col + (j - i)), value))
            col += j - i
            i = j
            continue
        op = next((o for o in _OPS if source.startswith(o, i)), None)
        if op is None:
            raise SyntaxProblem(
                f"Parse error: invalid input `{ch}`", span_to(i, line, col + 1, start)
            )
        if op in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise SyntaxProblem("Parse error: nesting too deep", Span(line, col, line, col + 1))
        elif op in ")]}":
            depth = max(depth - 1, 0)
        tokens.append(Token("op", op, Span(line, col, line, col + len(op))))
        i, col = i + len(op), col + len(op)
    if tokens and tokens[-1].kind != "newline":
        tokens.append(Token("newline", "\n", Span(line, col, line, col)))
    tokens.append(Token("eof", "", Span(line, col, line, col)))
    return tokens


def _string(
    source: str, start: int, quote_at: int, line: int, col: int, prefix: str, out: list[Token]
) -> tuple[int, int, int]:
    """Lex one string literal starting at `start`; returns the new (index, line, column)."""
    raw, is_f = "r" in prefix, "f" in prefix
    q = source[quote_at]
    triple = source.startswith(q * 3, quote_at)
    delim = q * 3 if triple else q
    i = quote_at + len(delim)
    s_line, s_col = line, col
    col += i - start
    chars: list[str] = []
    n = len(source)
    while True:
        if i >= n or (not triple and source[i] == "\n"):
            raise SyntaxProblem(
                "Parse error: unfinished string literal", Span(s_line, s_col, s_line, s_col + 1)
            )
        if source.startswith(delim, i):
            i += len(delim)
            col += len(delim)
            break
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            nxt = source[i + 1]
            if raw:
                chars.append(ch + nxt)
            elif nxt in _ESCAPES:
                chars.append(_ESCAPES[nxt])
            elif nxt in "xuU01234567":
                width = {"x": 2, "u": 4, "U": 8}.get(nxt, 0)
                if width:
                    digits = source[i + 2 : i + 2 + width]
                    try:
                        chars.append(chr(int(digits, 16)))
                    except ValueError:
                        raise SyntaxProblem(
                            "Parse error: invalid escape sequence",
                            Span(line, col, line, col + 2),
                        ) from None
                    i += width
                    col += width
                else:
                    j = i + 1
                    while j < min(i + 4, n) and source[j] in "01234567":
                        j += 1
                    chars.append(chr(int(source[i + 1 : j], 8)))
                    col += j - i - 2
                    i = j - 2
            else:
                chars.append(ch + nxt)
            if nxt == "\n":
                line, col = line + 1, 1
            else:
                col += 2
            i += 2
            continue
        chars.append(ch)
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    out.append(
        Token("fstring" if is_f else "string", "".join(chars), Span(s_line, s_col, line, col))
    )
    return i, line, col
