"""`shellgate project`: the dry-run projection of one output item, as protobuf JSON.

The turn file is either a `TurnContext` in protobuf JSON, or an object
`{"turn": TurnContext, "environments": [{"id", "remote", "cwd", "shell": {"name", "path"}}],
"thread_id": "…"}` that also describes remote environments (their reported shell and cwd).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from shellgate.common.errors import ServiceError
from shellgate.router.apply_patch import LocalFileSystem
from shellgate.router.handler.environments import ReportedShell
from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import RulesLoadError, load_rules
from shellgate.router.runtime.environments.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults
from shellgate.router.service.wire.projection import projection_json
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2

MAX_ITEM_BYTES = 8 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `shellgate project`."""
    parser.add_argument("--item", required=True, help="output item JSON, or - for stdin")
    parser.add_argument("--turn", help="turn file (TurnContext JSON, see module docs)")
    parser.add_argument("--rules", nargs="*", default=[], help=".rules files to load")
    parser.add_argument("--thread", default="cli", help="thread id (CODEX_THREAD_ID)")


def _environment_views(extra: list[dict[str, Any]]) -> dict[str, EnvironmentView]:
    views = {"local": EnvironmentView("local", False, os.getcwd(), None)}
    for env in extra:
        shell = env.get("shell")
        views[env["id"]] = EnvironmentView(
            environment_id=env["id"],
            remote=bool(env.get("remote", True)),
            cwd=env.get("cwd") or "/",
            shell=None if not shell else ReportedShell(shell["name"], shell["path"]),
            allow_login_shell=bool(env.get("allow_login_shell", True)),
        )
    return views


def run(args: argparse.Namespace) -> int:
    """Print the projection; exit 2 on a usage or input error."""
    item_text = sys.stdin.read(MAX_ITEM_BYTES + 1) if args.item == "-" else args.item
    if len(item_text) > MAX_ITEM_BYTES:
        print(f"shellgate project: item larger than {MAX_ITEM_BYTES} bytes", file=sys.stderr)
        return 2
    turn_pb = common_pb2.TurnContext()
    extra: list[dict[str, Any]] = []
    thread_id = args.thread
    try:
        if args.turn:
            data = json.loads(Path(args.turn).read_text())
            if isinstance(data, dict) and "turn" in data:
                extra = list(data.get("environments", []))
                thread_id = data.get("thread_id", thread_id)
                data = data["turn"]
            json_format.ParseDict(data, turn_pb)
        rules = [(path, Path(path).read_text()) for path in args.rules]
        policy = load_rules(rules)
        inputs = TurnInputs(TurnDefaults(), _environment_views(extra), gather_host_shell_facts())
        turn = router_turn(thread_id, turn_pb, inputs)
    except RulesLoadError as exc:
        print(f"shellgate project: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError, json_format.ParseError) as exc:
        print(f"shellgate project: invalid turn: {exc}", file=sys.stderr)
        return 2
    except ServiceError as exc:
        print(f"shellgate project: {exc.message}", file=sys.stderr)
        return 2
    fs = LocalFileSystem()
    host = HostContext(policy=policy, parent_env=dict(os.environ), filesystem=lambda _id: fs)
    print(projection_json(project(item_text, turn, host), host.memo))
    return 0
