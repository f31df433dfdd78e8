"""`shellgate serve`: run the router until SIGTERM/SIGINT (then shut down gracefully)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import signal
import sys

from shellgate.common.cli_options import LOG_LEVEL_HELP
from shellgate.common.config_schema import log_level
from shellgate.common.held_env import scrub_and_reexec, take_held
from shellgate.common.log_setup import LOG_FORMAT_HELP, LOG_FORMATS, configure_logging
from shellgate.common.process.escapes import enable_escape_reaping
from shellgate.common.process_tuning import tune_process
from shellgate.common.tasks import TaskSet
from shellgate.common.tracing import configure_tracing, shutdown_tracing
from shellgate.router.cli.banner import PROFILES, banner_lines, sandbox_refusal
from shellgate.router.cli.detach import detach
from shellgate.router.cli.run_files import publish_run_files
from shellgate.router.policy import RulesLoadError
from shellgate.router.service.app import RouterApp
from shellgate.router.service.config import ConfigError, check_rules_dirs, load_config
from shellgate.router.service.redaction import install_log_filter
from shellgate.router.service.server import serve_forever, start_router


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate serve` (each overrides the config file)."""
    parser.add_argument("--config", help="TOML configuration file")
    parser.add_argument("--listen", help="host:port (default 127.0.0.1:50051)")
    parser.add_argument(
        "--insecure", action="store_true", default=None,
        help="allow a non-loopback listen address without TLS",
    )  # fmt: skip
    parser.add_argument(
        "--health-listen", dest="health_listen",
        help="plaintext host:port serving only grpc.health.v1 (default none)",
    )  # fmt: skip
    parser.add_argument(
        "--project-listen", dest="project_listen",
        help="host:port serving only Project, on worker threads, with the main port's TLS "
        "and authentication (default none; docs/configuration.md)",
    )  # fmt: skip
    parser.add_argument("--rules-dir", action="append", dest="rules_dirs", help=".rules folder")
    parser.add_argument(
        "--no-local-token", dest="local_token", action="store_false", default=None,
        help="trust every local user: no generated token on a loopback address without "
        "token_file or mTLS (default: a random token in a 0600 file; `shellgate token` prints it)",
    )  # fmt: skip
    parser.add_argument(
        "--sandbox", choices=PROFILES, metavar="PROFILE",
        help="default permission profile of turns that set none: " + ", ".join(PROFILES)
        + " (overrides [defaults] permission_profile; default workspace-write, which needs "
        "bubblewrap)",
    )  # fmt: skip
    parser.add_argument(
        "--masked-path", action="append", dest="masked_paths", default=[], metavar="PATH",
        help="a file or folder every sandbox shows empty (repeatable; added to masked_paths)",
    )  # fmt: skip
    parser.add_argument("--print-port", action="store_true", help="print the bound port first")
    parser.add_argument(
        "--detach", action="store_true",
        help="start in the background and return once listening (exit 2 with the reason if "
        "it cannot start); its log goes to <runtime dir>/router-PORT.log, stop it with "
        "`shellgate stop`",
    )  # fmt: skip
    # Set by --detach for its child: the temporary file its stderr goes to (run_files.py).
    parser.add_argument("--detached-log", help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default="INFO", help=LOG_LEVEL_HELP)
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text", help=LOG_FORMAT_HELP)


# Config key -> the flag that sets it: a bad flag value is reported under the flag's name.
_FLAGS = {"listen": "--listen", "health_listen": "--health-listen",
          "project_listen": "--project-listen", "rules_dirs": "--rules-dir"}  # fmt: skip


async def _main(args: argparse.Namespace, held: dict[str, str]) -> int:
    overrides = {
        "listen": args.listen,
        "health_listen": args.health_listen,
        "project_listen": args.project_listen,
        "insecure": args.insecure,
        "rules_dirs": args.rules_dirs,
        "local_token": args.local_token,
    }
    try:
        config = load_config(args.config, _FLAGS, **overrides)
        for warning in check_rules_dirs(config, "--rules-dir" if args.rules_dirs else ""):
            logging.getLogger(__name__).warning("%s", warning)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.sandbox is not None:
        defaults = dataclasses.replace(config.defaults, permission_profile=args.sandbox)
        config = dataclasses.replace(config, defaults=defaults)
    if args.masked_paths:
        # Added to the file's list, never replacing it: a flag cannot unmask anything.
        masked = (*config.masked_paths, *(os.path.abspath(p) for p in args.masked_paths))
        config = dataclasses.replace(config, masked_paths=masked)
    refusal = sandbox_refusal(config)
    if refusal is not None:
        print(f"shellgate serve: {refusal}", file=sys.stderr)
        return 2
    if config.otel_endpoint:
        try:
            configure_tracing("shellgate-router", config.otel_endpoint)
        except ValueError as exc:
            print(f"shellgate serve: {exc}", file=sys.stderr)
            return 2
    try:
        # Commands may still see the held variables, but only through a policy that sets
        # ignore_default_excludes: they are in parent_env, never in os.environ.
        router = await start_router(config, parent_env={**os.environ, **held})
    except RulesLoadError as exc:
        print(f"shellgate serve: rules failed to load:\n{exc.render()}", file=sys.stderr)
        return 2
    except (ConfigError, OSError, RuntimeError) as exc:
        print(f"shellgate serve: cannot start: {exc}", file=sys.stderr)
        return 2
    if router.app.redactor is not None:
        install_log_filter(router.app.redactor)
    # Malloc thresholds and GC, once everything loaded at start is in place.
    tune_process()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Handlers first: a supervisor may send SIGTERM as soon as it sees the port.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    reloads = TaskSet()
    loop.add_signal_handler(signal.SIGHUP, lambda: _reload(router.app, reloads))
    token_path = router.local_token.path if router.local_token is not None else None
    store = router.app.policy_store
    console_port = router.console.port if router.console is not None else None
    banner = banner_lines(
        config, router.port, store.files if store else None, token_path, console_port
    )
    # On stderr, where the logs go too (journald, kubectl logs), before the port: whoever
    # waits for the port (`--detach`) then has the whole banner.
    print("\n".join(banner), file=sys.stderr, flush=True)
    # Before the port: `--detach` names the log by its final path once it reads the port.
    grace_ms = config.limits.shutdown_grace_ms
    run_files = publish_run_files(config.listen, router.port, args.detached_log, grace_ms)
    if args.print_port:
        print(router.port, flush=True)
    try:
        await serve_forever(router, stop)
    finally:
        run_files.withdraw()
    # The last spans (this shutdown's calls) are still batched: send them before exiting.
    await asyncio.to_thread(shutdown_tracing)
    return 0


def _reload(app: RouterApp, tasks: TaskSet) -> None:
    """SIGHUP: reload the rules on the CPU pool; the loop keeps answering meanwhile."""

    async def reload() -> None:
        # The store logs the result (with the error's file:line) and counts it.
        await app.reload_rules()

    tasks.spawn(reload(), name="rules-reload")


def run(args: argparse.Namespace) -> int:
    """Entry point."""
    try:
        level = log_level(args.log_level)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.detach:
        return detach([a for a in sys.argv[2:] if a not in ("--detach", "--print-port")])
    if sys.argv[1:2] == ["serve"]:
        scrub_and_reexec("shellgate.router.cli.main", sys.argv[1:])
    held = take_held()
    # This process runs commands (the embedded environment): escapes die with them.
    enable_escape_reaping()
    configure_logging(level, args.log_format, "router")
    return asyncio.run(_main(args, held))
