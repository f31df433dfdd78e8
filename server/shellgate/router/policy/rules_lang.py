"""Load `.rules` files (Starlark subset, spec 04 §1) into a Policy, interpreting them as data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shellgate.router.bash.shlex_rs import shlex_join_strict as shlex_join
from shellgate.router.policy.evaluate import matches_for_command
from shellgate.router.policy.model import Policy
from shellgate.router.policy.rules_builtins import (
    BUILTINS,
    Builtin,
    BuiltinFailure,
    PolicyBuilder,
    starlark_repr,
    type_name,
)
from shellgate.router.policy.rules_errors import RulesLoadError, Span
from shellgate.router.policy.rules_lexer import SyntaxProblem
from shellgate.router.policy.rules_syntax import (
    Add,
    Assign,
    Call,
    Expr,
    FStr,
    Int,
    ListExpr,
    Name,
    Str,
    TupleExpr,
    parse_module,
)

_CONSTANTS: dict[str, object] = {"True": True, "False": False, "None": None}


class _Interpreter:
    def __init__(self, path: str, source: str, builder: PolicyBuilder) -> None:
        self.path, self.source, self.b = path, source, builder
        self.globals: dict[str, object] = {}

    def error(self, message: str, span: Span, *, traceback: bool) -> RulesLoadError:
        return RulesLoadError(self.path, self.source, span, message, traceback=traceback)

    def run(self) -> None:
        try:
            statements = parse_module(self.source)
        except SyntaxProblem as exc:
            raise self.error(exc.message, exc.span, traceback=False) from None
        for stmt in statements:
            if isinstance(stmt, Assign):
                self.globals[stmt.target.ident] = self.eval(stmt.value)
            else:
                self.eval(stmt)

    def eval(self, expr: Expr) -> Any:
        if isinstance(expr, Str):
            return expr.value
        if isinstance(expr, Int):
            return expr.value
        if isinstance(expr, Name):
            return self.lookup(expr)
        if isinstance(expr, FStr):
            out = [expr.parts[0]]
            for name, part in zip(expr.names, expr.parts[1:], strict=True):
                value = self.lookup(name)
                out += [value if isinstance(value, str) else starlark_repr(value), part]
            return "".join(out)
        if isinstance(expr, ListExpr):
            return [self.eval(e) for e in expr.items]
        if isinstance(expr, TupleExpr):
            return tuple(self.eval(e) for e in expr.items)
        if isinstance(expr, Add):
            left, right = self.eval(expr.left), self.eval(expr.right)
            same = type(left) is type(right) and isinstance(left, str | list | tuple | int)
            if not same or isinstance(left, bool):
                raise self.error(
                    f"Operation `+` not supported for types `{type_name(left)}` and "
                    f"`{type_name(right)}`",
                    expr.span,
                    traceback=True,
                )
            return left + right
        return self.call(expr)

    def lookup(self, name: Name) -> Any:
        if name.ident in self.globals:
            return self.globals[name.ident]
        if name.ident in BUILTINS:
            return BUILTINS[name.ident]
        if name.ident in _CONSTANTS:
            return _CONSTANTS[name.ident]
        raise self.error(f"Variable `{name.ident}` not found", name.span, traceback=False)

    def call(self, call: Call) -> None:
        func = self.eval(call.func)
        if not isinstance(func, Builtin):
            raise self.error(
                f"Operation `call` not supported on type `{type_name(func)}`",
                call.span,
                traceback=True,
            )
        args: dict[str, Any] = {}
        names = [p[0] for p in func.params]
        if len(call.args) > len(names):
            raise self.error(
                f"Too many positional arguments for call to `{func.name}`",
                call.span,
                traceback=True,
            )
        for pname, arg in zip(names, call.args, strict=False):
            args[pname] = self.eval(arg)
        for key, arg in call.kwargs:
            if key not in names:
                raise self.error(
                    f"Found `{key}` extra named parameter(s) for call to {func.name}",
                    call.span,
                    traceback=True,
                )
            if key in args:
                raise self.error(
                    f"Multiple values for parameter `{key}` in call to `{func.name}`",
                    call.span,
                    traceback=True,
                )
            args[key] = self.eval(arg)
        for pname, expected, required in func.params:
            if pname not in args:
                if required:
                    raise self.error(
                        f"Missing parameter `{pname}` for call to `{func.name}`",
                        call.span,
                        traceback=True,
                    )
                continue
            value = args[pname]
            ok = isinstance(value, str) if expected == "str" else isinstance(value, list)
            if not ok:
                raise self.error(
                    f"Type of parameter `{pname}` doesn't match, expected `{expected}`, actual "
                    f"`{type_name(value)} (repr: {starlark_repr(value)})`",
                    call.span,
                    traceback=True,
                )
        try:
            func.impl(self.b, args, call.span)
        except BuiltinFailure as exc:
            raise self.error(str(exc), call.span, traceback=True) from None


def _validate(path: str, source: str, b: PolicyBuilder, start: int) -> None:
    """Check each new call's match / not_match examples against a policy of its rules."""
    for pending in b.pending[start:]:
        policy = Policy(pending.rules, (), dict(b.hosts))

        def fail(message: str, span: Span = pending.span) -> RulesLoadError:
            return RulesLoadError(path, source, span, message, traceback=False, plain=True)

        for example in pending.not_matches:
            found = matches_for_command(policy, example, None, resolve_host_executables=True)
            if found:
                first = found[0]
                debug = first.debug() if hasattr(first, "debug") else repr(first)
                raise fail(f"expected example to not match rule `{debug}`: {_join(example)}")
        unmatched = [
            _join(ex)
            for ex in pending.matches
            if not matches_for_command(policy, ex, None, resolve_host_executables=True)
        ]
        if unmatched:
            rules = ", ".join(_rust_str(r.debug()) for r in pending.rules)
            examples = ", ".join(_rust_str(e) for e in unmatched)
            raise fail(
                "expected every example to match at least one rule. "
                f"rules: [{rules}]; unmatched examples: [{examples}]"
            )


def _join(words: Sequence[str]) -> str:
    try:
        return shlex_join(words)
    except ValueError:
        return "unable to render example"


def _rust_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def load_rules(
    files: Sequence[tuple[str, str]], *, home: str | None = None, base: Policy | None = None
) -> Policy:
    """Load `(path, text)` rules files in order into one Policy; raises RulesLoadError."""
    b = PolicyBuilder(home)
    if base is not None:
        b.rules, b.network, b.hosts = (
            list(base.rules),
            list(base.network_rules),
            dict(base.host_executables),
        )
    for path, source in files:
        start = len(b.pending)
        b.current_file = path
        _Interpreter(path, source, b).run()
        _validate(path, source, b, start)
    return Policy(tuple(b.rules), tuple(b.network), b.hosts)


def parse_policy(source: str, path: str = "policy.rules", *, home: str | None = None) -> Policy:
    """Load one rules text; raises RulesLoadError."""
    return load_rules([(path, source)], home=home)
