"""`shellgate-execserver serve …`: run the exec-server daemon."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import signal
import sys
from typing import Any

from shellgate.common.auth import hashed_token_line
from shellgate.common.cli_options import (
    LOG_LEVEL_HELP,
    add_version_flag,
    package_version,
)
from shellgate.common.config_schema import ConfigError, log_level
from shellgate.common.held_env import scrub_and_reexec, take_held
from shellgate.common.local_token import read_local_token, token_path
from shellgate.common.log_setup import LOG_FORMAT_HELP, LOG_FORMATS, configure_logging
from shellgate.common.process.escapes import enable_escape_reaping
from shellgate.common.process_tuning import tune_process
from shellgate.common.sandbox import local_sandbox_summary, sandbox_unavailable_reason
from shellgate.common.tracing import configure_tracing, shutdown_tracing
from shellgate.execserver.config import ServerConfig, check_root, load_config
from shellgate.execserver.server import start_server

_SERVE_EXAMPLES = """examples:
  shellgate-execserver serve --listen 127.0.0.1:7000   # loopback: generated token, no TLS
  shellgate-execserver serve --listen 0.0.0.0:7000 --tls-cert host.pem --tls-key host.key \\
      --token-file /etc/shellgate/tokens
  shellgate-execserver serve --listen 127.0.0.1:7000 --codex-listen ws://127.0.0.1:7001
  shellgate-execserver token --port 7001   # auth_bearer_token for environments.toml
  (a router then names it: [[environments]] id = "build", target = "HOST:7000")"""
_STDIO_EXAMPLES = """examples:
  shellgate-execserver codex-stdio --config /etc/shellgate/execserver.toml
  # Codex's environments.toml: program = "ssh", args = ["buildhost", "shellgate-execserver", "codex-stdio"]"""
_TOKEN_EXAMPLES = """examples:
  shellgate-execserver token --port 7001          # the token itself
  shellgate-execserver token --port 7001 --path   # the 0600 file holding it"""
_CHECK_EXAMPLES = """examples:
  shellgate-execserver codex-check                        # ~/.codex/environments.toml's default
  shellgate-execserver codex-check --environment buildhost --codex ~/.local/bin/codex
  shellgate-execserver codex-check --environments ./environments.toml --sandbox danger-full-access"""
_HASH_EXAMPLES = """examples:
  printf '%s\\n' "$TOKEN" | shellgate-execserver hash-token router-1 >> /etc/shellgate/tokens"""


def build_parser() -> argparse.ArgumentParser:
    """The `shellgate-execserver` argument parser (every subcommand)."""
    parser = argparse.ArgumentParser(
        prog="shellgate-execserver",
        description="The exec-server daemon: runs a router's commands on this host (or over SSH).",
        epilog=_SERVE_EXAMPLES.replace("examples:", "start here:", 1),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version_flag(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the daemon", description="Run the exec-server daemon.",
        epilog=_SERVE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    serve.add_argument("--config", help="TOML configuration file")
    serve.add_argument("--listen", help="host:port (default 127.0.0.1:0)")
    serve.add_argument("--print-port", action="store_true", help="print the bound port")
    serve.add_argument("--health-listen", dest="health_listen",
                       help="plaintext host:port serving only grpc.health.v1 (default none)")
    serve.add_argument("--insecure", action="store_true", default=None,
                       help="allow a non-loopback listen address without TLS")
    serve.add_argument("--token-file", help="bearer tokens, one per line")
    serve.add_argument(
        "--no-local-token", dest="local_token", action="store_false", default=None,
        help="trust every local user: no generated token on a loopback address without "
        "--token-file or mTLS, for gRPC and --codex-listen ws:// alike (default: a random "
        "token in a 0600 file, see the docs)",
    )  # fmt: skip
    serve.add_argument("--tls-cert", dest="tls_cert_file", help="server certificate (PEM)")
    serve.add_argument("--tls-key", dest="tls_key_file", help="server key (PEM)")
    serve.add_argument("--tls-client-ca", dest="tls_client_ca_file",
                       help="CA verifying client certificates: turns on mTLS")
    serve.add_argument("--root", help="default cwd reported by GetInfo")
    serve.add_argument("--codex-listen", dest="codex_listen",
                       help="also speak Codex's exec-server protocol: ws://127.0.0.1:PORT "
                       "(loopback; bearer token: --token-file's, else the local token) or "
                       "wss://HOST:PORT (TLS + --token-file)")  # fmt: skip
    serve.add_argument("--codex-host", dest="codex_hosts", action="append", default=[],
                       metavar="NAME", help="a Host name the --codex-listen listener answers "
                       "to besides its address (repeatable; e.g. the wss:// name on 0.0.0.0)")  # fmt: skip
    serve.add_argument("--log-level", default="INFO", help=LOG_LEVEL_HELP)
    serve.add_argument("--log-format", choices=LOG_FORMATS, default="text", help=LOG_FORMAT_HELP)
    stdio = sub.add_parser(
        "codex-stdio", help="speak Codex's exec-server protocol on stdin/stdout",
        description="One Codex exec-server session as NDJSON on stdin/stdout, for "
        "environments.toml `program` entries (e.g. program = \"ssh\", args = "
        "[\"buildhost\", \"shellgate-execserver\", \"codex-stdio\"]). Logs go to stderr.",
        epilog=_STDIO_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    stdio.add_argument("--config", help="TOML configuration file (backend, limits)")
    stdio.add_argument("--root", help="default cwd reported by environment/info")
    stdio.add_argument("--log-level", default="WARNING", help=LOG_LEVEL_HELP)
    token = sub.add_parser(
        "token", help="print the local token a daemon of this user published for a port",
        description="Print the generated local token of a `shellgate-execserver serve` on "
        "this machine, by the port of its gRPC or --codex-listen listener (for Codex's "
        "environments.toml `auth_bearer_token`, or grpcurl).",
        epilog=_TOKEN_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    token.add_argument("--port", type=int, required=True, help="the listener's port")
    token.add_argument("--path", action="store_true", help="print the file's path instead")
    _add_check_parser(sub)
    hash_token = sub.add_parser(
        "hash-token",
        help="print a token-file line holding a token's SHA-256 instead of the token",
        description="Reads the token from standard input (so it stays out of argv and shell "
        "history) and prints `SUBJECT sha256:<hex>` for the daemon's token file.",
        epilog=_HASH_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hash_token.add_argument("subject", help="the caller subject the token authenticates")
    return parser


def _add_check_parser(sub: Any) -> None:
    from shellgate.execserver.codex.check import DEFAULT_TIMEOUT_S
    from shellgate.execserver.codex.check_turn import SANDBOX_MODES

    check = sub.add_parser(
        "codex-check", help="check a Codex environments.toml set-up with one scripted turn",
        description="Run one turn of your own codex against a scripted model on 127.0.0.1 "
        "(no model service, none of your Codex credentials) on an environments.toml "
        "environment: reports the codex version, the environment reached and authenticated, "
        "and a command run there; or names the problem in one line (exit 1).",
        epilog=_CHECK_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    check.add_argument("--codex", default="codex", metavar="PATH",
                       help="the codex executable (default: codex on PATH)")  # fmt: skip
    check.add_argument("--environments", metavar="FILE",
                       help="the environments file (default: $CODEX_HOME/environments.toml, "
                       "else ~/.codex/environments.toml, as Codex reads it)")  # fmt: skip
    check.add_argument("--environment", metavar="ID",
                       help="the environment to check (default: the file's `default`)")  # fmt: skip
    check.add_argument("--sandbox", choices=SANDBOX_MODES, default="read-only",
                       help="Codex's sandbox_mode for the turn (default: read-only, as codex "
                       "exec's)")  # fmt: skip
    check.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                       help=f"bound of the whole check (default: {DEFAULT_TIMEOUT_S:g})")  # fmt: skip


def _codex_check(args: argparse.Namespace) -> int:
    from shellgate.execserver.codex.check import CheckOptions, run_check

    options = CheckOptions(
        codex=args.codex, environments=args.environments, environment=args.environment,
        sandbox=args.sandbox, timeout_s=args.timeout,
    )  # fmt: skip
    return run_check(options, sys.stdout, sys.stderr)


def _hash_token(subject: str) -> int:
    token = sys.stdin.readline().strip()
    if not token or len(subject.split()) != 1:
        print("shellgate-execserver hash-token: need one subject word and a token on stdin",
              file=sys.stderr)  # fmt: skip
        return 2
    print(hashed_token_line(subject, token))
    return 0


def _print_token(port: int, path: bool) -> int:
    token = read_local_token("execserver", port)
    if token is None:
        print(f"shellgate-execserver token: no token for port {port}: "
              f"{token_path('execserver', port)} is missing or unreadable (is a "
              "`shellgate-execserver serve` with a local token listening there, started by "
              "this user?)", file=sys.stderr)  # fmt: skip
        return 1
    print(token_path("execserver", port) if path else token)
    return 0


# Config key -> the flag that sets it: a bad flag value is reported under the flag's name.
_FLAGS = {
    "listen": "--listen",
    "health_listen": "--health-listen",
    "token_file": "--token-file",
    "tls_cert_file": "--tls-cert",
    "tls_key_file": "--tls-key",
    "tls_client_ca_file": "--tls-client-ca",
    "root": "--root",
}


async def _serve(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {
        "listen": args.listen,
        "health_listen": args.health_listen,
        "insecure": args.insecure,
        "token_file": args.token_file,
        "local_token": args.local_token,
        "tls_cert_file": args.tls_cert_file,
        "tls_key_file": args.tls_key_file,
        "tls_client_ca_file": args.tls_client_ca_file,
        "root": args.root,
    }
    try:
        config = load_config(args.config, overrides, _FLAGS)
        check_root(config, _FLAGS["root"] if args.root else "")
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.codex_hosts:
        hosts = (*config.codex_ws.hosts, *args.codex_hosts)
        config = dataclasses.replace(
            config, codex_ws=dataclasses.replace(config.codex_ws, hosts=hosts)
        )
    if config.otel_endpoint:
        try:
            configure_tracing("shellgate-execserver", config.otel_endpoint)
        except ValueError as exc:
            print(f"shellgate-execserver serve: {exc}", file=sys.stderr)
            return 2
    try:
        running = await start_server(config)
    except (ValueError, OSError) as exc:  # bad settings, unreadable files, a busy port
        print(f"shellgate-execserver serve: {exc}", file=sys.stderr)
        return 2
    codex = None
    if args.codex_listen:
        from shellgate.execserver.codex.runner import start_beside

        try:
            codex = await start_beside(running, config, args.codex_listen)
        except (ValueError, OSError) as exc:
            await running.stop(0)
            print(f"shellgate-execserver serve: {exc}", file=sys.stderr)
            return 2
    # Malloc thresholds and GC, once everything loaded at start is in place.
    tune_process()
    _announce_sandbox(config)
    if args.print_port:
        print(running.port, flush=True)
        if codex is not None:
            print(codex.port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signo in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signo, stop.set)
    await stop.wait()
    logging.getLogger(__name__).info("shutting down")
    if codex is not None:
        await codex.stop()  # its sessions kill their processes before the table drains
    await running.stop(config.shutdown_grace_ms)
    # The last spans (this shutdown's calls) are still batched: send them before exiting.
    await asyncio.to_thread(shutdown_tracing)
    return 0


def _announce_sandbox(config: ServerConfig) -> None:
    """Log the sandbox in use (the listen line and the token line are logged by the server)."""
    log = logging.getLogger(__name__)
    if config.backend != "local":
        log.info("shellgate-execserver %s: sandbox probed on the SSH host (GetInfo reports it)",
                 package_version())  # fmt: skip
    elif sandbox_unavailable_reason():
        # Not fatal: callers that ask for no sandbox are served; sandboxed Starts are refused
        # with FAILED_PRECONDITION (spec 06 §7), never run unsandboxed.
        log.warning("shellgate-execserver %s: sandbox: %s", package_version(), local_sandbox_summary())
    else:
        log.info("shellgate-execserver %s: sandbox: %s", package_version(), local_sandbox_summary())


async def _codex_stdio(args: argparse.Namespace) -> int:
    from shellgate.execserver.codex.runner import run_stdio

    try:
        config = load_config(args.config, {"root": args.root}, _FLAGS)
        check_root(config, _FLAGS["root"] if args.root else "")
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    await run_stdio(config)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    if args.command == "hash-token":
        return _hash_token(args.subject)
    if args.command == "token":
        return _print_token(args.port, args.path)
    if args.command == "codex-check":
        return _codex_check(args)
    try:
        level = log_level(args.log_level)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if argv is None:
        scrub_and_reexec("shellgate.execserver.cli", sys.argv[1:])
    # The daemon's commands never get its secret-named variables back (Codex's client sends
    # ignoreDefaultExcludes, so the daemon's own stripping is what protects them).
    take_held()
    # This process runs commands: their escapes die with them.
    enable_escape_reaping()
    configure_logging(level, getattr(args, "log_format", "text"), "execserver")
    if args.command == "codex-stdio":
        return asyncio.run(_codex_stdio(args))
    return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
