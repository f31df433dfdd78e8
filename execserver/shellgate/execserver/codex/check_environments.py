"""Codex 0.169's `environments.toml`: where it is, Codex's own rules for it, one entry's copy.

The rules are the ones the 0.169.0 binary enforces at start (each is a hard error there:
`codex exec` exits 1 before any turn), so a file this module accepts is one Codex accepts:
top-level keys `default`, `include_local`, `environments`; per entry `id` (at most 64 of
`[A-Za-z0-9_-]`, `local` and `none` reserved, no duplicates) and exactly one of `url`
(`ws://` or `wss://`) or a non-empty `program`; `auth_bearer_token` and
`connect_timeout_sec` only with `url`, and a token only over `wss://` or to a loopback host.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shellgate.execserver.codex.check_common import CheckFailed, UsageError

TOP_KEYS = ("default", "include_local", "environments")
ENTRY_KEYS = ("id", "skills", "url", "auth_bearer_token", "program", "args", "env", "cwd",
              "connect_timeout_sec", "initialize_timeout_sec")  # fmt: skip
RESERVED_IDS = ("local", "none")
MAX_ID_CHARS = 64
# Codex's default for both connect_timeout_sec and initialize_timeout_sec.
DEFAULT_TIMEOUT_S = 10.0
_ID = re.compile(r"[A-Za-z0-9_-]+")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Environment:
    """One `[[environments]]` entry, validated; `entry` is the table as written."""

    id: str
    url: str = ""
    token: str | None = None
    program: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    connect_timeout_s: float = DEFAULT_TIMEOUT_S
    initialize_timeout_s: float = DEFAULT_TIMEOUT_S
    entry: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The entry as a report names it: its url, or its command line."""
        return self.url or " ".join([self.program, *self.args])


@dataclass(frozen=True)
class EnvironmentsFile:
    """A parsed `environments.toml`."""

    path: Path
    default: str | None
    include_local: bool
    environments: tuple[Environment, ...]


def default_path(environ: Mapping[str, str]) -> Path:
    """Where Codex 0.169 reads it: `$CODEX_HOME/environments.toml`, else `~/.codex/…`."""
    home = environ.get("CODEX_HOME", "")
    # Codex treats an empty CODEX_HOME as unset.
    base = Path(home).expanduser() if home else Path.home() / ".codex"
    return base / "environments.toml"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (where Codex lets a token travel over ws://)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load(path: Path) -> EnvironmentsFile:
    """Read and validate the file; CheckFailed names the problem as Codex would."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckFailed(
            f"no environments file: {path} does not exist (Codex reads "
            "$CODEX_HOME/environments.toml, else ~/.codex/environments.toml; docs/codex.md "
            "shows one)"
        ) from None
    except OSError as exc:
        raise CheckFailed(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CheckFailed(f"{path}: not valid TOML: {exc}") from None
    try:
        return _parse(path, data)
    except ValueError as exc:
        raise CheckFailed(f"{path}: {exc}") from None


def _unknown(table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            expected = ", ".join(f"`{k}`" for k in allowed)
            raise ValueError(f"unknown field `{key}`, expected one of {expected} (Codex 0.169 "
                             "refuses the whole file)")  # fmt: skip


def _parse(path: Path, data: Mapping[str, Any]) -> EnvironmentsFile:
    _unknown(data, TOP_KEYS)
    default = data.get("default")
    if default is not None and not isinstance(default, str):
        raise ValueError("`default` must be a string")
    include_local = data.get("include_local", True)
    if not isinstance(include_local, bool):
        raise ValueError("`include_local` must be true or false")
    entries = data.get("environments", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError("`environments` must be [[environments]] tables")
    environments = tuple(_entry(e) for e in entries)
    seen: set[str] = set()
    for env in environments:
        if env.id in seen:
            raise ValueError(f"environment id `{env.id}` is duplicated")
        seen.add(env.id)
    if default is not None and default not in RESERVED_IDS and default not in seen:
        raise ValueError(f"default environment `{default}` is not configured")
    return EnvironmentsFile(path, default, include_local, environments)


def _string(entry: Mapping[str, Any], key: str, name: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"environment `{name}` {key} must be a string")
    return value


def _seconds(entry: Mapping[str, Any], key: str, name: str) -> float:
    value = entry.get(key, DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"environment `{name}` {key} must be a positive number of seconds")
    return float(value)


def _entry(entry: Mapping[str, Any]) -> Environment:
    _unknown(entry, ENTRY_KEYS)
    name = entry.get("id")
    if not isinstance(name, str):
        raise ValueError("an environment has no `id` string")
    if name in RESERVED_IDS:
        raise ValueError(f"environment id `{name}` is reserved")
    if len(name) > MAX_ID_CHARS:
        raise ValueError(f"environment id `{name}` cannot be longer than {MAX_ID_CHARS} characters")
    if not _ID.fullmatch(name):
        raise ValueError(f"environment id `{name}` must contain only ASCII letters, numbers, "
                         "'-' or '_'")  # fmt: skip
    url, program = _string(entry, "url", name), _string(entry, "program", name)
    if ("url" in entry) == ("program" in entry):
        raise ValueError(f"environment `{name}` must set exactly one of url or program")
    for key in ("auth_bearer_token", "connect_timeout_sec"):
        if key in entry and "url" not in entry:
            raise ValueError(f"environment `{name}` {key} requires url")
    token = entry.get("auth_bearer_token")
    if token is not None and not isinstance(token, str):
        raise ValueError(f"environment `{name}` auth_bearer_token must be a string")
    if "url" in entry:
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"environment url `{url}` must use ws:// or wss://")
        if token is not None and parts.scheme == "ws" and not is_loopback(parts.hostname):
            raise ValueError(f"environment `{name}`: an auth_bearer_token requires wss:// or a "
                             "loopback destination (Codex will not send it over this ws://)")  # fmt: skip
    elif not program:
        raise ValueError(f"environment `{name}` program cannot be empty")
    args = entry.get("args", [])
    env = entry.get("env", {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"environment `{name}` args must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ValueError(f"environment `{name}` env must be a table of strings")
    return Environment(
        id=name, url=url, token=token, program=program, args=tuple(args), env=dict(env),
        cwd=_string(entry, "cwd", name),
        connect_timeout_s=_seconds(entry, "connect_timeout_sec", name),
        initialize_timeout_s=_seconds(entry, "initialize_timeout_sec", name), entry=dict(entry),
    )  # fmt: skip


def select(envs: EnvironmentsFile, wanted: str | None) -> Environment:
    """The entry to check: `wanted` (UsageError when unknown), else the file's `default`."""
    ids = ", ".join(e.id for e in envs.environments) or "none"
    if wanted is not None:
        for env in envs.environments:
            if env.id == wanted:
                return env
        raise UsageError(f"--environment {wanted}: {envs.path} has no such environment "
                         f"(it has: {ids})")  # fmt: skip
    if envs.default is None:
        raise CheckFailed(f"{envs.path} sets no `default`, so Codex never uses its environments "
                          f"(set default = \"ID\"; it has: {ids}), or name one with --environment")  # fmt: skip
    if envs.default in RESERVED_IDS:
        where = "on this machine" if envs.default == "local" else "nowhere"
        raise CheckFailed(f"{envs.path}: default = \"{envs.default}\": Codex runs commands "
                          f"{where}, not on an exec-server (it has: {ids}; name one with "
                          "--environment)")  # fmt: skip
    return next(e for e in envs.environments if e.id == envs.default)


def notes(envs: EnvironmentsFile, chosen: Environment) -> list[str]:
    """What the file does that the check does not exercise (the check pins both)."""
    found = []
    if envs.include_local:
        found.append("include_local is not false: when this environment cannot be reached, "
                     "Codex runs the commands on this machine without saying so (set "
                     "include_local = false)")  # fmt: skip
    if envs.default != chosen.id:
        found.append(f"default is {json.dumps(envs.default) if envs.default else 'unset'}: "
                     f"Codex uses \"{chosen.id}\" only for turns that select it")  # fmt: skip
    return found


def toml_value(value: Any) -> str:
    """A TOML rendering of a value read by tomllib (strings as basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML basic-string escapes; DEL is the one control JSON keeps.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return str(value.isoformat())  # the date and time types


def toml_key(key: str) -> str:
    """A bare key when it may be one, else a quoted key."""
    return key if _BARE_KEY.fullmatch(key) else toml_value(key)


def pinned_copy(chosen: Environment) -> str:
    """An environments.toml with only `chosen`, its default, and no local fallback.

    `include_local = false` makes a turn that cannot reach the environment say so instead of
    running the command here, so what the check sees ran on the environment.
    """
    lines = [f"default = {toml_value(chosen.id)}", "include_local = false", "", "[[environments]]"]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in chosen.entry.items()]
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write a file only this user can read (it may hold the bearer token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
