"""`shellgate mcp`: serve Codex's shell tools to an MCP client over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import signal
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
    from shellgate.client.mcp.embedded import masked_path_args

    # Its sandboxes must not read the HTTP callers' tokens (or this process's other secrets).
    return out + masked_path_args(args.http_token_file, args.token_file, args.tls_key)


def _check(args: argparse.Namespace) -> str | None:
    """The reason the options cannot work together, or None."""
    from shellgate.client.mcp.http import is_loopback

    if args.http:
        host, sep, port = args.http.rpartition(":")
        if not sep or not port.isdigit():
            return f"--http: expected HOST:PORT, got {args.http!r}"
        if not is_loopback(host) and not args.http_token_file:
            return "--http off loopback needs --http-token-file (a bearer token)"
        if host.strip("[]") in ("0.0.0.0", "::") and not args.http_host:
            return "--http on a wildcard address needs --http-host NAME (each name clients use)"
    if args.router and (args.config or args.rules_dir or args.sandbox):
        return "--config/--rules-dir/--sandbox configure the private router; not with --router"
    return None


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    """Entry point."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        print(
            "shellgate mcp: needs the `mcp` package: pip install 'shellgate[mcp]'", file=sys.stderr
        )
        return 2
    from shellgate.client.mcp.embedded import EmbeddedRouter
    from shellgate.client.mcp.http import open_http
    from shellgate.client.mcp.serving import serve

    problem = _check(args)
    if args.log_level.upper() not in logging.getLevelNamesMapping():
        problem = f"--log-level: not a log level (got {args.log_level!r})"
    http = None
    if problem is None and args.http:
        # Bound (and its token published) before the private router starts: a port in use
        # fails at once, and the token file's path is known from here on.
        try:
            http = open_http(args.http, args.http_token_file, local_token=args.local_token,
                             names=args.http_host)  # fmt: skip
        except ValueError as exc:
            problem = f"--http-token-file: {exc}"
        except OSError as exc:
            problem = f"--http {args.http}: {exc}"
    if problem is not None:
        print(f"shellgate mcp: {problem}", file=sys.stderr)
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
            token=token_from_file(args.token_file) if args.token_file else None,
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
