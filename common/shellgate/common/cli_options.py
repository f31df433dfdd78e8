"""Command-line pieces both daemons share: `--version`, `--log-level` and its one-line check."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL_HELP = "DEBUG, INFO, WARNING, ERROR or CRITICAL (default INFO; any case)"


def package_version() -> str:
    """The installed `shellgate` distribution's version ("unknown" when not installed)."""
    try:
        return version("shellgate")
    except PackageNotFoundError:
        return "unknown"


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """`--version`: print `PROG VERSION` and exit 0."""
    parser.add_argument(
        "--version", action="version", version=f"{parser.prog} {package_version()}"
    )


def log_level_problem(value: str) -> str | None:
    """None when `value` names a logging level; otherwise the one line that says what is allowed.

    Checked after parsing rather than by argparse, whose error repeats the whole usage.
    """
    if value.upper() in LOG_LEVELS:
        return None
    return f"--log-level {value!r} is not a level: use one of {', '.join(LOG_LEVELS)}"
