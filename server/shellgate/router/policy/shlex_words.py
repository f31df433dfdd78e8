"""Rust `shlex` 1.3 split/join for the policy package: a view of `shellgate.router.shlex_rs`.

There is one implementation (`shlex_rs`); this module keeps the policy package's names, where
`shlex_join` raises `ShlexJoinError` on a NUL byte instead of returning the display placeholder.
"""

from __future__ import annotations

from shellgate.router.shlex_rs import ShlexJoinError, join_for_display, shlex_quote, shlex_split
from shellgate.router.shlex_rs import shlex_join_strict as shlex_join

__all__ = ["ShlexJoinError", "join_for_display", "shlex_join", "shlex_quote", "shlex_split"]
