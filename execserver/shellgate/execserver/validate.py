"""Inbound Start checks: every field against a named limit, the field named on rejection."""

from __future__ import annotations

import os
from collections.abc import Mapping

from shellgate.common.errors import InvalidArgumentError
from shellgate.execserver.config import ServerConfig


def check_argv(argv: list[str], config: ServerConfig) -> None:
    """Non-empty, within max_argv_items and max_argv_bytes, no NUL bytes."""
    if not argv:
        raise InvalidArgumentError("argv must not be empty")
    if len(argv) > config.max_argv_items:
        raise InvalidArgumentError(
            f"argv has more than {config.max_argv_items} items", limit="max_argv_items"
        )
    if sum(len(a.encode()) for a in argv) > config.max_argv_bytes:
        raise InvalidArgumentError(
            f"argv is larger than {config.max_argv_bytes} bytes", limit="max_argv_bytes"
        )
    if any("\0" in a for a in argv):
        raise InvalidArgumentError("argv must not contain NUL characters")


def check_env(env: Mapping[str, str], config: ServerConfig, field: str) -> None:
    """Within max_env_entries and max_env_bytes; valid names."""
    if len(env) > config.max_env_entries:
        raise InvalidArgumentError(
            f"{field} has more than {config.max_env_entries} entries", limit="max_env_entries"
        )
    size = sum(len(k.encode()) + len(v.encode()) for k, v in env.items())
    if size > config.max_env_bytes:
        raise InvalidArgumentError(
            f"{field} is larger than {config.max_env_bytes} bytes", limit="max_env_bytes"
        )
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise InvalidArgumentError(f"{field} has an invalid entry {key!r}")


def resolve_cwd(cwd: str, default: str) -> str:
    """An absolute cwd, or the daemon's default when empty."""
    if not cwd:
        return default
    if not os.path.isabs(cwd) or "\0" in cwd:
        raise InvalidArgumentError("cwd must be an absolute path")
    return cwd


def check_owner(owner: str, config: ServerConfig) -> None:
    """Owner tag within max_owner_chars."""
    if len(owner) > config.max_owner_chars:
        raise InvalidArgumentError(
            f"owner is longer than {config.max_owner_chars} characters", limit="max_owner_chars"
        )


def check_size(rows: int, cols: int, config: ServerConfig, *, allow_zero: bool) -> None:
    """PTY rows/cols within max_pty_rows/max_pty_cols (zero = default when allowed)."""
    low = 0 if allow_zero else 1
    if not low <= rows <= config.max_pty_rows:
        raise InvalidArgumentError(
            f"rows must be between {low} and {config.max_pty_rows}", limit="max_pty_rows"
        )
    if not low <= cols <= config.max_pty_cols:
        raise InvalidArgumentError(
            f"cols must be between {low} and {config.max_pty_cols}", limit="max_pty_cols"
        )
