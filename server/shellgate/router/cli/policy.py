"""`shellgate policy check`: evaluate a command against `.rules` files like `codex execpolicy check`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from shellgate.router.policy import RulesLoadError, check_multiple, evaluation_to_json, load_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register `policy check` and its options."""
    sub = parser.add_subparsers(dest="policy_command", required=True)
    check = sub.add_parser(
        "check", help="check a command against execpolicy rule files",
        usage="shellgate policy check [OPTIONS] --rules FILE [--rules FILE …] [--] COMMAND…",
        epilog="examples:\n  shellgate policy check --rules default.rules git push --force\n"
        "  shellgate policy check -r a.rules -r b.rules --pretty -- /usr/bin/git status",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    # One file per --rules and the command is everything from its first word on, options
    # included, as Codex's clap parser reads `codex execpolicy check --rules f git push`.
    check.add_argument(
        "-r",
        "--rules",
        action="append",
        required=True,
        metavar="FILE",
        help="execpolicy rule file to evaluate (repeatable; loaded in order as one policy)",
    )
    check.add_argument(
        "--resolve-host-executables",
        action="store_true",
        help="resolve absolute program paths against basename rules, gated by host_executable()",
    )
    check.add_argument("--pretty", action="store_true", help="pretty-print the JSON output")
    check.add_argument(
        "command", nargs=argparse.REMAINDER,
        help="command tokens to check (everything after the options; -- optional)",
    )  # fmt: skip


def check_output(
    files: list[tuple[str, str]], command: list[str], *, resolve: bool, pretty: bool, home: str
) -> str:
    """The JSON text printed for one check (raises RulesLoadError)."""
    policy = load_rules(files, home=home)
    evaluation = check_multiple(policy, [command], None, resolve_host_executables=resolve)
    return dump_json(evaluation_to_json(evaluation), pretty=pretty)


def dump_json(value: Any, *, pretty: bool) -> str:
    """serde_json's compact or pretty form (UTF-8 kept, two-space indent)."""
    if pretty:
        return json.dumps(value, ensure_ascii=False, indent=2)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def run(args: argparse.Namespace) -> int:
    """Run `policy check`; 0 on success, 1 when a rules file cannot be read or loaded."""
    files: list[tuple[str, str]] = []
    for path in args.rules:
        try:
            with open(path, encoding="utf-8") as handle:
                files.append((path, handle.read()))
        except (OSError, UnicodeDecodeError) as exc:
            print(
                f"Error: failed to read policy at {path}\n\nCaused by:\n    {exc}", file=sys.stderr
            )
            return 1
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("Error: a command to check is required (after the options)", file=sys.stderr)
        return 2
    try:
        text = check_output(
            files,
            command,
            resolve=args.resolve_host_executables,
            pretty=args.pretty,
            home=os.path.expanduser("~"),
        )
    except RulesLoadError as exc:
        detail = "\n".join("    " + line if line else "" for line in exc.text().splitlines())
        print(
            f"Error: failed to parse policy at {exc.path}\n\nCaused by:\n{detail}", file=sys.stderr
        )
        print(exc.render(), file=sys.stderr)
        return 1
    print(text)
    return 0
