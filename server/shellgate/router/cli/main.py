"""The `shellgate` command line: serve, stop, status, call, project, eval, policy check."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from shellgate.common.cli_options import add_version_flag

# subcommand -> (module, help). Each module exposes `add_arguments(parser)` and
# `run(args) -> int`; only the chosen subcommand's module is imported, so `shellgate eval`
# does not pay for grpc start-up.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("shellgate.router.cli.serve", "run the ToolRouterService"),
    "stop": (
        "shellgate.router.cli.stop",
        "stop the local router (SIGTERM, then SIGKILL after a grace)",
    ),
    "status": ("shellgate.router.cli.status", "is the local router running (pid, address, log)"),
    "call": ("shellgate.client.call_cli", "send one model output item to a router"),
    "project": ("shellgate.router.cli.project", "print the projection of one output item"),
    "eval": ("shellgate.router.cli.eval", "conformance: JSON lines in, answers out"),
    "policy": ("shellgate.router.cli.policy", "exec-policy tools (check)"),
    "token": ("shellgate.client.token_cli", "print the local router's generated token"),
    "mcp": ("shellgate.mcp.cli", "serve Codex's shell tools to MCP clients (stdio or HTTP)"),
    "audit": ("shellgate.router.cli.audit", "check or print an audit log (verify, tail)"),
}

# Shown at the end of each subcommand's --help: help that teaches starts from an example.
EXAMPLES: dict[str, str] = {
    "serve": """examples:
  shellgate serve                # 127.0.0.1:50051, embedded local environment, rules: none
  shellgate serve --detach && shellgate call --cmd "echo hello"
  shellgate serve --sandbox danger-full-access    # no bubblewrap here: run commands unsandboxed
  mkdir -p ~/.codex/rules && shellgate serve --rules-dir ~/.codex/rules    # Codex's rules folder""",
    "call": """examples:
  shellgate call --cmd "ls -la"                   # exec_command in the router's local environment
  shellgate call --cmd "make test" --tool shell_command --timeout-ms 60000 --approve yes
  echo '{"type":"function_call","name":"exec_command","arguments":"{\\"cmd\\":\\"pwd\\"}","call_id":"c1"}' \\
    | shellgate call --item -""",
    "project": """examples:
  shellgate project --rules default.rules --item \\
    '{"type":"function_call","name":"shell_command","arguments":"{\\"command\\":\\"git push\\"}","call_id":"c1"}'""",
    "eval": """examples:
  echo '{"fn":"detect_shell_type","input":"bash"}' | shellgate eval""",
    "policy": """examples:
  shellgate policy check --rules default.rules git push --force""",
    "audit": """examples:
  shellgate audit verify audit.log.1 audit.log    # oldest first; exit 1 at the first broken line
  shellgate audit tail -n 50 audit.log""",
    "stop": """examples:
  shellgate stop                                  # the router on 127.0.0.1:50051
  shellgate stop --target 127.0.0.1:50052 --timeout 60""",
    "status": """examples:
  shellgate status                                # exit 0 running, 3 not running
  shellgate status --target 127.0.0.1:50052""",
    "token": """examples:
  grpcurl -plaintext -H "authorization: Bearer $(shellgate token)" 127.0.0.1:50051 list""",
    "mcp": """examples:
  shellgate mcp                                   # stdio, private router, cwd = here
  shellgate mcp --http 127.0.0.1:8765             # streamable HTTP at http://127.0.0.1:8765/mcp
  shellgate mcp --rules-dir ~/.codex/rules        # the private router enforces these rules
  shellgate mcp --router 127.0.0.1:50051          # front a running router (its policy, its audit)""",
}


def build_parser(chosen: str | None) -> argparse.ArgumentParser:
    """The argument parser; only the chosen subcommand gets its full arguments."""
    parser = argparse.ArgumentParser(
        prog="shellgate", description=__doc__, epilog=EXAMPLES["serve"].replace("examples:", "start here:", 1),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_version_flag(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(
            name, help=help_text, description=help_text, epilog=EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )  # fmt: skip
        sp.set_defaults(_module=module_name)
        if name == chosen:
            importlib.import_module(module_name).add_arguments(sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    args = build_parser(chosen).parse_args(args_list)
    return int(importlib.import_module(args._module).run(args))


if __name__ == "__main__":
    sys.exit(main())
