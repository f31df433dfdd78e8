"""`shellgate mcp`: serve Codex's shell tools to an MCP client over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, NamedTuple

from shellgate.client.events import Decision
from shellgate.client.options import TlsOptions, token_from_file

if TYPE_CHECKING:
    from shellgate.mcp.auth import TokenFileVerifier

_APPROVAL_POLICIES = ("untrusted", "on-request", "on-failure", "never")


class Credentials(NamedTuple):
    """What the token files hold: the router's bearer token, the HTTP callers' tokens."""

    router_token: str | None
    http_tokens: TokenFileVerifier | None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate mcp`."""
    parser.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )  # fmt: skip
    parser.add_argument(
        "--http-token-file",
        help="bearer tokens HTTP clients must send, `subject token` per line; each subject "
        "gets its own threads (required off loopback; default on loopback: a generated token)",
    )
    parser.add_argument(
        "--no-local-token", dest="local_token", action="store_false",
        help="with --http on loopback and no --http-token-file: trust every local user, no "
        "bearer token (default: a random token in a 0600 file, its path printed at start)",
    )  # fmt: skip
    parser.add_argument(
        "--http-host", action="append", default=[], metavar="NAME",
        help="with --http: another name clients reach it by (its Host header; loopback "
        "names always pass); a wildcard HOST needs its names here",
    )  # fmt: skip
    parser.add_argument(
        "--session-idle-timeout", type=float, default=1800.0, metavar="SECONDS",
        help="with --http: end a session (and kill its processes) after this long without "
        "requests (default 1800)",
    )  # fmt: skip
    parser.add_argument(
        "--print-port", action="store_true", help="with --http: print the bound port"
    )
    parser.add_argument(
        "--router", metavar="HOST:PORT",
        help="front this running router (default: start a private one, like `shellgate serve`)",
    )  # fmt: skip
    parser.add_argument("--token-file", help="bearer token file for --router")
    parser.add_argument("--tls-ca", help="CA bundle (PEM) verifying --router; implies TLS")
    parser.add_argument("--tls-cert", help="client certificate (PEM) for mTLS to --router")
    parser.add_argument("--tls-key", help="client key (PEM) for mTLS to --router")
    parser.add_argument("--config", help="TOML configuration of the private router")
    parser.add_argument(
        "--rules-dir", action="append", default=[], help="private router: .rules folder"
    )
    parser.add_argument(
        "--sandbox", metavar="PROFILE", help="private router: default permission profile"
    )
    parser.add_argument("--cwd", default=None, help="working directory of commands (default: here)")
    parser.add_argument(
        "--approval-policy", choices=_APPROVAL_POLICIES, default="on-request",
        help="when commands need the user's approval (default on-request)",
    )  # fmt: skip
    parser.add_argument(
        "--approval-fallback", choices=("deny", "approve"), default="deny",
        help="answer for clients without elicitation support (default deny)",
    )  # fmt: skip
    parser.add_argument("--log-level", default="WARNING", help="log level (on stderr)")


def _serve_args(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    if args.config:
        out += ["--config", args.config]
    for folder in args.rules_dir:
        out += ["--rules-dir", folder]
    if args.sandbox:
        out += ["--sandbox", args.sandbox]
    from shellgate.mcp.embedded import masked_path_args

    # Its sandboxes must not read the HTTP callers' tokens (or this process's other secrets).
    return out + masked_path_args(args.http_token_file, args.token_file, args.tls_key)


def _check(args: argparse.Namespace) -> str | None:
    """The reason the options cannot work together, or None."""
    from shellgate.common.grpc.listen import is_loopback_host

    if args.http:
        host, sep, port = args.http.rpartition(":")
        if not sep or not port.isdigit():
            return f"--http: expected HOST:PORT, got {args.http!r}"
        if not is_loopback_host(host) and not args.http_token_file:
            return "--http off loopback needs --http-token-file (a bearer token)"
        if host.strip("[]") in ("0.0.0.0", "::") and not args.http_host:
            return "--http on a wildcard address needs --http-host NAME (each name clients use)"
    if args.router and (args.config or args.rules_dir or args.sandbox):
        return "--config/--rules-dir/--sandbox configure the private router; not with --router"
    return None


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _credentials(args: argparse.Namespace) -> Credentials | str:
    """The token files, read before anything is bound or started; else one line why."""
    from shellgate.mcp.auth import TokenFileVerifier

    router_token = http_tokens = None
    # A file that is missing, a directory, unreadable, not text or malformed: one line
    # naming the option, exit 2 (not a traceback after the private router started).
    option, path = "--token-file", args.token_file
    try:
        if path:
            router_token = token_from_file(path)
        option, path = "--http-token-file", args.http_token_file
        if path and args.http:
            http_tokens = TokenFileVerifier.from_file(path)
    except (OSError, ValueError) as exc:
        return f"{option}: {_reason(path, exc)}"
    return Credentials(router_token, http_tokens)


def _reason(path: str, exc: Exception) -> str:
    """One line for a token file that cannot be used (the path once, no traceback)."""
    if isinstance(exc, OSError):
        return f"cannot read {path}: {exc.strerror or exc}"
    if isinstance(exc, UnicodeDecodeError):
        return f"{path}: not a text file"
    return str(exc)


def run(args: argparse.Namespace) -> int:
    """Entry point."""
    try:
        # The SDK's server package, not just a module named `mcp` (run from a checkout,
        # the source root's folder `mcp/` would pass for a namespace package).
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        print(
            "shellgate mcp: needs the `mcp` package: pip install 'shellgate[mcp]'", file=sys.stderr
        )
        return 2
    from shellgate.mcp.embedded import EmbeddedRouter
    from shellgate.mcp.http import open_http
    from shellgate.mcp.serving import serve

    problem = _check(args)
    if args.log_level.upper() not in logging.getLevelNamesMapping():
        problem = f"--log-level: not a log level (got {args.log_level!r})"
    # Either what the token files hold or, from here on, the one line of a refusal.
    credentials = _credentials(args) if problem is None else problem
    http = None
    if not isinstance(credentials, str) and args.http:
        # Bound (and its token published) before the private router starts: a port in use
        # fails at once, and the token file's path is known from here on.
        try:
            http = open_http(args.http, credentials.http_tokens, local_token=args.local_token,
                             names=args.http_host)  # fmt: skip
        except OSError as exc:
            credentials = f"--http {args.http}: {exc}"
    if isinstance(credentials, str):
        print(f"shellgate mcp: {credentials}", file=sys.stderr)
        return 2
    if http is not None:
        # Closed (its token file removed) however this process ends but SIGKILL: SIGTERM,
        # which uvicorn re-raises after its graceful shutdown, exits like SIGINT does.
        atexit.register(http.close)
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")  # fmt: skip
    if http is not None and http.token_path is not None:
        # The path, never the token: stderr is the MCP client's log of this server.
        print(f"shellgate mcp: HTTP clients send `Authorization: Bearer <token>`, the token "
              f"in {http.token_path} (removed at exit)", file=sys.stderr, flush=True)  # fmt: skip
    embedded = None
    target = args.router
    if target is None:
        embedded = EmbeddedRouter(_serve_args(args), args.log_level.upper())
        try:
            embedded.start()
        except RuntimeError as exc:
            print(f"shellgate mcp: {exc}", file=sys.stderr)
            return 2
        target = embedded.target
    tls = None
    if args.tls_ca or args.tls_cert or args.tls_key:
        tls = TlsOptions(args.tls_ca, args.tls_cert, args.tls_key)
    try:
        return serve(
            target=target, tls=tls,
            token=credentials.router_token,
            http=http,
            print_port=args.print_port, idle_timeout_s=args.session_idle_timeout,
            # A remote router's host has its own directories: its default cwd applies there.
            cwd=args.cwd or (os.getcwd() if embedded is not None else None),
            approval_policy=args.approval_policy,
            fallback=Decision.APPROVED if args.approval_fallback == "approve" else Decision.DENIED,
        )  # fmt: skip
    finally:
        if embedded is not None:
            embedded.stop()
