"""Tokenizer and parser for the Starlark subset of `.rules` files (data only, never exec)."""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.policy.rules_errors import Span

# Bounds on adversarial files: nesting depth of brackets and total tokens.
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


@dataclass(frozen=True)
class Str:
    """A string literal."""

    value: str
    span: Span


@dataclass(frozen=True)
class FStr:
    """An f-string: literal parts and `{name}` holes, alternating (literal first)."""

    parts: tuple[str, ...]
    names: tuple[Name, ...]
    span: Span


@dataclass(frozen=True)
class Int:
    """An integer literal (possibly negated)."""

    value: int
    span: Span


@dataclass(frozen=True)
class Name:
    """A variable or builtin reference."""

    ident: str
    span: Span


@dataclass(frozen=True)
class ListExpr:
    """`[a, b]`."""

    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class TupleExpr:
    """`(a, b)`."""

    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Call:
    """`f(pos…, key=value…)`."""

    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    span: Span


@dataclass(frozen=True)
class Add:
    """`a + b` (string or list concatenation, integer addition)."""

    left: Expr
    right: Expr
    span: Span


Expr = Str | FStr | Int | Name | ListExpr | TupleExpr | Call | Add


@dataclass(frozen=True)
class Assign:
    """`name = expr` at top level."""

    target: Name
    value: Expr


Statement = Assign | Expr

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


def _describe(tok: Token) -> str:
    if tok.kind == "newline":
        return "new line"
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "name":
        return f"identifier '{tok.value}'"
    if tok.kind in ("string", "fstring"):
        return "string literal"
    if tok.kind == "int":
        return "integer literal"
    return f"symbol '{tok.value}'"


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.pos = 0

    def peek(self) -> Token:
        return self.toks[self.pos]

    def next(self) -> Token:
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def fail(self, expected: str) -> SyntaxProblem:
        tok = self.peek()
        return SyntaxProblem(
            f"Parse error: unexpected {_describe(tok)}, expected {expected}", tok.span
        )

    def is_op(self, value: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.value == value

    def expect_op(self, value: str) -> Token:
        if not self.is_op(value):
            raise self.fail(f"symbol '{value}'")
        return self.next()

    def module(self) -> list[Statement]:
        out: list[Statement] = []
        while self.peek().kind != "eof":
            if self.peek().kind == "newline" or self.is_op(";"):
                self.next()
                continue
            if self.peek().kind == "name" and self.peek().value == "pass":
                self.next()
            else:
                out.append(self.statement())
            if self.peek().kind not in ("newline", "eof") and not self.is_op(";"):
                raise self.fail("new line")
        return out

    def statement(self) -> Statement:
        tok = self.peek()
        if tok.kind == "name" and tok.value in ("def", "if", "for", "load", "return", "while"):
            raise SyntaxProblem(
                f"Parse error: `{tok.value}` is not supported in .rules files", tok.span
            )
        expr = self.expr()
        if self.is_op("="):
            if not isinstance(expr, Name):
                raise self.fail("new line")
            self.next()
            return Assign(expr, self.expr())
        return expr

    def expr(self) -> Expr:
        left = self.unary()
        while self.is_op("+"):
            self.next()
            right = self.unary()
            left = Add(left, right, _join(left.span, right.span))
        return left

    def unary(self) -> Expr:
        if self.is_op("-"):
            minus = self.next()
            inner = self.unary()
            if not isinstance(inner, Int):
                raise SyntaxProblem("Parse error: unary minus needs an integer", minus.span)
            return Int(-inner.value, _join(minus.span, inner.span))
        return self.postfix()

    def postfix(self) -> Expr:
        expr = self.primary()
        while self.is_op("("):
            self.next()
            args: list[Expr] = []
            kwargs: list[tuple[str, Expr]] = []
            while not self.is_op(")"):
                tok = self.peek()
                if (
                    tok.kind == "name"
                    and self.toks[self.pos + 1].kind == "op"
                    and self.toks[self.pos + 1].value == "="
                ):
                    self.pos += 2
                    kwargs.append((tok.value, self.expr()))
                else:
                    if kwargs:
                        raise SyntaxProblem(
                            "Parse error: positional argument after named argument", tok.span
                        )
                    args.append(self.expr())
                if not self.is_op(","):
                    break
                self.next()
            close = self.expect_op(")")
            expr = Call(expr, tuple(args), tuple(kwargs), _join(expr.span, close.span))
        return expr

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "string":
            self.next()
            value, span = tok.value, tok.span
            return Str(value, span)
        if tok.kind == "fstring":
            self.next()
            return _fstring(tok)
        if tok.kind == "int":
            self.next()
            return Int(tok.number, tok.span)
        if tok.kind == "name":
            self.next()
            return Name(tok.value, tok.span)
        if self.is_op("[") or self.is_op("("):
            open_tok = self.next()
            closer = "]" if open_tok.value == "[" else ")"
            items: list[Expr] = []
            trailing_comma = False
            while not self.is_op(closer):
                items.append(self.expr())
                trailing_comma = False
                if not self.is_op(","):
                    break
                self.next()
                trailing_comma = True
            close = self.expect_op(closer)
            span = _join(open_tok.span, close.span)
            if closer == "]":
                return ListExpr(tuple(items), span)
            if len(items) == 1 and not trailing_comma:
                return items[0]
            return TupleExpr(tuple(items), span)
        raise self.fail("expression")


def _fstring(tok: Token) -> FStr:
    parts: list[str] = []
    names: list[Name] = []
    buf: list[str] = []
    text, i = tok.value, 0
    while i < len(text):
        ch = text[i]
        if text.startswith("{{", i) or text.startswith("}}", i):
            buf.append(ch)
            i += 2
            continue
        if ch == "{":
            end = text.find("}", i)
            ident = text[i + 1 : end].strip() if end >= 0 else ""
            if end < 0 or not ident.isidentifier():
                raise SyntaxProblem("Parse error: invalid f-string", tok.span)
            parts.append("".join(buf))
            buf = []
            names.append(Name(ident, tok.span))
            i = end + 1
            continue
        buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return FStr(tuple(parts), tuple(names), tok.span)


def _join(a: Span, b: Span) -> Span:
    return Span(a.line, a.column, b.end_line, b.end_column)


def parse_module(source: str) -> list[Statement]:
    """Parse a whole `.rules` file into statements; raises SyntaxProblem."""
    return _Parser(tokenize(source)).module()
