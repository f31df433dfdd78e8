"""Command-line pieces both daemons share: `--version` and the `--log-level` help (the check
is `config_schema.log_level`)."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

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
