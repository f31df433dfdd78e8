"""Load `.rules` files (Starlark subset, spec 04 §1) into a Policy, interpreting them as data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shellgate.router.policy.evaluate import matches_for_command
from shellgate.router.policy.model import (
    Decision,
    NetworkProtocol,
    NetworkRule,
    PatternToken,
    Policy,
    PrefixRule,
)
from shellgate.router.policy.paths import normalize_absolute, path_basename
from shellgate.router.policy.rules_errors import RulesLoadError, Span
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
    SyntaxProblem,
    TupleExpr,
    parse_module,
)
from shellgate.router.policy.shlex_words import shlex_join, shlex_split


class _Fail(Exception):
    """A builtin rejected its arguments (message without location)."""


@dataclass
class _Builtin:
    name: str
    params: tuple[tuple[str, str, bool], ...]  # (name, expected type, required)
    impl: Callable[[_Builder, dict[str, Any], Span], None]


@dataclass
class _Pending:
    rules: tuple[PrefixRule, ...]
    matches: list[tuple[str, ...]]
    not_matches: list[tuple[str, ...]]
    span: Span


@dataclass
class _Builder:
    home: str | None
    rules: list[PrefixRule] = field(default_factory=list)
    network: list[NetworkRule] = field(default_factory=list)
    hosts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pending: list[_Pending] = field(default_factory=list)


def _type_name(value: object) -> str:
    if value is None:
        return "NoneType"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    return "function"


def _repr(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_repr(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, _Builtin):
        return f"<built-in function {value.name}>"
    return str(value)


def _pattern_token(value: object) -> PatternToken:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        alts: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise _Fail(
                    "invalid pattern element: pattern alternative must be a string "
                    f"(got {_type_name(item)})"
                )
            alts.append(item)
        if not alts:
            raise _Fail("invalid pattern element: pattern alternatives cannot be empty")
        return tuple(alts)
    raise _Fail(
        "invalid pattern element: pattern element must be a string or list of strings "
        f"(got {_type_name(value)})"
    )


def _example(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        words = shlex_split(value)
        if words is None:
            raise _Fail("invalid example: example string has invalid shell syntax")
        if not words:
            raise _Fail("invalid example: example cannot be an empty string")
        return tuple(words)
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise _Fail(
                    f"invalid example: example tokens must be strings (got {_type_name(item)})"
                )
        if not value:
            raise _Fail("invalid example: example cannot be an empty list")
        return tuple(value)
    raise _Fail(
        f"invalid example: example must be a string or list of strings (got {_type_name(value)})"
    )


def _justification(raw: str | None) -> str | None:
    if raw is not None and not raw.strip():
        raise _Fail("invalid rule: justification cannot be empty")
    return raw


def _decision(raw: str) -> Decision:
    try:
        return Decision(raw)
    except ValueError:
        raise _Fail(f"invalid decision: {raw}") from None


def _prefix_rule(b: _Builder, args: dict[str, Any], span: Span) -> None:
    raw_decision = args.get("decision")
    decision = Decision.ALLOW if raw_decision is None else _decision(raw_decision)
    justification = _justification(args.get("justification"))
    tokens = [_pattern_token(v) for v in args["pattern"]]
    if not tokens:
        raise _Fail("invalid pattern element: pattern cannot be empty")
    matches = [_example(v) for v in args.get("match") or []]
    not_matches = [_example(v) for v in args.get("not_match") or []]
    rest = tuple(tokens[1:])
    # Alternatives in the first position give one rule per program; later ones match in place.
    rules = tuple(PrefixRule(head, rest, decision, justification) for head in tokens[0])
    b.pending.append(_Pending(rules, matches, not_matches, span))
    b.rules.extend(rules)


def normalize_network_host(raw: str) -> str:
    """Normalise a `network_rule` host (spec 04 §1.3); raises ValueError with Codex's text."""
    host = raw.strip()
    if not host:
        raise ValueError("network_rule host cannot be empty")
    if "://" in host or any(c in host for c in "/?#"):
        raise ValueError(
            "network_rule host must be a hostname or IP literal (without scheme or path)"
        )
    if host.startswith("["):
        inside, sep, rest = host[1:].partition("]")
        if not sep:
            raise ValueError("network_rule host has an invalid bracketed IPv6 literal")
        port = rest[1:] if rest.startswith(":") else None
        if rest and not (port and port.isascii() and port.isdigit()):
            raise ValueError(f"network_rule host contains an unsupported suffix: {raw}")
        host = inside
    elif host.count(":") == 1:
        candidate, _, port = host.rpartition(":")
        if candidate and port and port.isascii() and port.isdigit():
            host = candidate
    normalized = host.rstrip(".").strip().lower()
    if not normalized:
        raise ValueError("network_rule host cannot be empty")
    if "*" in normalized:
        raise ValueError("network_rule host must be a specific host; wildcards are not allowed")
    if any(c.isspace() for c in normalized):
        raise ValueError("network_rule host cannot contain whitespace")
    return normalized


_PROTOCOLS = {
    "http": NetworkProtocol.HTTP,
    "https": NetworkProtocol.HTTPS,
    "https_connect": NetworkProtocol.HTTPS,
    "http-connect": NetworkProtocol.HTTPS,
    "socks5_tcp": NetworkProtocol.SOCKS5_TCP,
    "socks5_udp": NetworkProtocol.SOCKS5_UDP,
}


def _network_rule(b: _Builder, args: dict[str, Any], span: Span) -> None:
    raw_protocol: str = args["protocol"]
    protocol = _PROTOCOLS.get(raw_protocol)
    if protocol is None:
        raise _Fail(
            "invalid rule: network_rule protocol must be one of http, https, socks5_tcp, "
            f"socks5_udp (got {raw_protocol})"
        )
    raw_decision: str = args["decision"]
    decision = Decision.FORBIDDEN if raw_decision == "deny" else _decision(raw_decision)
    justification = _justification(args.get("justification"))
    try:
        host = normalize_network_host(args["host"])
    except ValueError as exc:
        raise _Fail(f"invalid rule: {exc}") from None
    b.network.append(NetworkRule(host, protocol, decision, justification))


def _host_executable(b: _Builder, args: dict[str, Any], span: Span) -> None:
    name: str = args["name"]
    if not name:
        raise _Fail("invalid rule: host_executable name cannot be empty")
    if "/" in name or name in (".", ".."):
        raise _Fail(
            f"invalid rule: host_executable name must be a bare executable name (got {name})"
        )
    paths: list[str] = []
    for value in args["paths"]:
        if not isinstance(value, str):
            raise _Fail(
                f"invalid rule: host_executable paths must be strings (got {_type_name(value)})"
            )
        if value.startswith("~/") and b.home is not None:
            absolute = normalize_absolute(b.home.rstrip("/") + "/" + value[2:])
        elif value.startswith("/"):
            absolute = normalize_absolute(value)
        else:
            raise _Fail(
                "invalid rule: host_executable paths must be absolute or use `~/...` "
                f"home-relative syntax (got {value})"
            )
        if path_basename(absolute) != name:
            raise _Fail(f"invalid rule: host_executable path `{value}` must have basename `{name}`")
        if absolute not in paths:
            paths.append(absolute)
    b.hosts[name] = tuple(paths)


_BUILTINS = {
    f.name: f
    for f in (
        _Builtin(
            "prefix_rule",
            (
                ("pattern", "list", True),
                ("decision", "str", False),
                ("match", "list", False),
                ("not_match", "list", False),
                ("justification", "str", False),
            ),
            _prefix_rule,
        ),
        _Builtin(
            "network_rule",
            (
                ("host", "str", True),
                ("protocol", "str", True),
                ("decision", "str", True),
                ("justification", "str", False),
            ),
            _network_rule,
        ),
        _Builtin(
            "host_executable", (("name", "str", True), ("paths", "list", True)), _host_executable
        ),
    )
}
_CONSTANTS: dict[str, object] = {"True": True, "False": False, "None": None}


class _Interpreter:
    def __init__(self, path: str, source: str, builder: _Builder) -> None:
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
                out += [value if isinstance(value, str) else _repr(value), part]
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
                    f"Operation `+` not supported for types `{_type_name(left)}` and "
                    f"`{_type_name(right)}`",
                    expr.span,
                    traceback=True,
                )
            return left + right
        return self.call(expr)

    def lookup(self, name: Name) -> Any:
        if name.ident in self.globals:
            return self.globals[name.ident]
        if name.ident in _BUILTINS:
            return _BUILTINS[name.ident]
        if name.ident in _CONSTANTS:
            return _CONSTANTS[name.ident]
        raise self.error(f"Variable `{name.ident}` not found", name.span, traceback=False)

    def call(self, call: Call) -> None:
        func = self.eval(call.func)
        if not isinstance(func, _Builtin):
            raise self.error(
                f"Operation `call` not supported on type `{_type_name(func)}`",
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
                    f"`{_type_name(value)} (repr: {_repr(value)})`",
                    call.span,
                    traceback=True,
                )
        try:
            func.impl(self.b, args, call.span)
        except _Fail as exc:
            raise self.error(str(exc), call.span, traceback=True) from None


def _validate(path: str, source: str, b: _Builder, start: int) -> None:
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
    b = _Builder(home)
    if base is not None:
        b.rules, b.network, b.hosts = (
            list(base.rules),
            list(base.network_rules),
            dict(base.host_executables),
        )
    for path, source in files:
        start = len(b.pending)
        _Interpreter(path, source, b).run()
        _validate(path, source, b, start)
    return Policy(tuple(b.rules), tuple(b.network), b.hosts)


def parse_policy(source: str, path: str = "policy.rules", *, home: str | None = None) -> Policy:
    """Load one rules text; raises RulesLoadError."""
    return load_rules([(path, source)], home=home)
