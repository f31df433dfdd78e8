"""`shellgate mcp`: serve Codex's shell tools to an MCP client over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from shellgate.client.events import Decision
from shellgate.client.options import TlsOptions, token_from_file

_APPROVAL_POLICIES = ("untrusted", "on-request", "on-failure", "never")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate mcp`."""
    parser.add_argument(
        "--http", metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )  # fmt: skip
    parser.add_argument(
        "--http-token-file",
        help="bearer tokens HTTP clients must send, `subject token` per line; each subject "
        "gets its own threads (required off loopback)",
    )
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
    return out


def _check(args: argparse.Namespace) -> str | None:
    """The reason the options cannot work together, or None."""
    from shellgate.client.mcp.http import is_loopback

    if args.http:
        host, sep, port = args.http.rpartition(":")
        if not sep or not port.isdigit():
            return f"--http: expected HOST:PORT, got {args.http!r}"
        if not is_loopback(host) and not args.http_token_file:
            return "--http off loopback needs --http-token-file (a bearer token)"
    if args.router and (args.config or args.rules_dir or args.sandbox):
        return "--config/--rules-dir/--sandbox configure the private router; not with --router"
    return None


def run(args: argparse.Namespace) -> int:
    """Entry point."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        print(
            "shellgate mcp: needs the `mcp` package: pip install 'shellgate[mcp]'", file=sys.stderr
        )
        return 2
    from shellgate.client.mcp.auth import TokenFileVerifier
    from shellgate.client.mcp.embedded import EmbeddedRouter
    from shellgate.client.mcp.serving import serve

    problem = _check(args)
    if args.log_level.upper() not in logging.getLevelNamesMapping():
        problem = f"--log-level: not a log level (got {args.log_level!r})"
    http_tokens = None
    if problem is None and args.http_token_file:
        try:
            http_tokens = TokenFileVerifier(args.http_token_file)
        except (OSError, ValueError) as exc:
            problem = f"--http-token-file: {exc}"
    if problem is not None:
        print(f"shellgate mcp: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")  # fmt: skip
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
            token=token_from_file(args.token_file) if args.token_file else None,
            http=args.http,
            http_tokens=http_tokens,
            print_port=args.print_port, idle_timeout_s=args.session_idle_timeout,
            # A remote router's host has its own directories: its default cwd applies there.
            cwd=args.cwd or (os.getcwd() if embedded is not None else None),
            approval_policy=args.approval_policy,
            fallback=Decision.APPROVED if args.approval_fallback == "approve" else Decision.DENIED,
        )  # fmt: skip
    finally:
        if embedded is not None:
            embedded.stop()
