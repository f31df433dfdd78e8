"""Parser (to an AST) for the Starlark subset of `.rules` files (data only, never exec)."""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.policy.rules_errors import Span
from shellgate.router.policy.rules_lexer import SyntaxProblem, Token, tokenize


# Bounds on adversarial files: nesting depth of brackets and total tokens.
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
