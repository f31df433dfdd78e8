"""`shellgate eval`: JSON lines in, one JSON answer line out per input line, in order."""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

from shellgate.router.cli.conformance import EvalFailure, registry


def answer_line(line: str, table: dict[str, Any]) -> dict[str, Any]:
    """Answer one input line (spec/06-service.md §1)."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return {"error": f"invalid input: {exc}"}
    if not isinstance(request, dict) or not isinstance(request.get("fn"), str):
        return {"error": "invalid input: expected an object with a string `fn`"}
    name = request["fn"]
    fn = table.get(name)
    if fn is None:
        return {"error": f"unknown fn {name}"}
    try:
        return {"output": fn(request.get("input"))}
    except EvalFailure as exc:
        out: dict[str, Any] = {"error": exc.message}
        if exc.rendered is not None:
            out["rendered"] = exc.rendered
        return out
    except Exception as exc:  # eval never stops early; a failure is an answer
        return {"error": f"{type(exc).__name__}: {exc}"}


def answer_stream(stdin: IO[str], stdout: IO[str]) -> int:
    """Process every line of stdin."""
    table = registry()
    for line in stdin:
        stdout.write(json.dumps(answer_line(line, table), ensure_ascii=False) + "\n")
        stdout.flush()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`shellgate eval` takes no arguments: JSON lines on stdin."""


def run(args: argparse.Namespace) -> int:
    """Entry point for the `eval` subcommand."""
    return answer_stream(sys.stdin, sys.stdout)
