"""Display metadata records: what a command appears to do, for humans only (spec 03 §D)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Read:
    """A command that reads one file."""

    cmd: str
    name: str
    path: str


@dataclass(frozen=True, slots=True)
class ListFiles:
    """A command that lists files, optionally under a path."""

    cmd: str
    path: str | None


@dataclass(frozen=True, slots=True)
class Search:
    """A command that searches, with an optional query and path."""

    cmd: str
    query: str | None
    path: str | None


@dataclass(frozen=True, slots=True)
class Unknown:
    """Anything else."""

    cmd: str


ParsedCommand = Read | ListFiles | Search | Unknown
