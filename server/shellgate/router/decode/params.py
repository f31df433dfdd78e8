"""Typed tool-argument records and their serde struct layouts (spec 01 §5.2–§5.5).

The records are frozen dataclasses; `*_SPEC` values describe the Codex structs field by field
(declaration order, aliases, defaults) for `json_decode.decode_struct`. Relative paths inside
`additional_permissions.file_system` are resolved against a base cwd while decoding (§5.5),
so the permission decoders are built per call by `additional_permissions_field(base_cwd)`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.serde_json.cursor import I32_MAX, I32_MIN, U64_MAX
from shellgate.router.decode.serde_json.fast import (
    Slow,
    fast_bool,
    fast_enum,
    fast_int,
    fast_null,
    fast_option,
    fast_string,
    fast_strings,
)
from shellgate.router.decode.serde_json.typed import (
    MISSING,
    Decoder,
    Field,
    JsonError,
    ProductError,
    Reader,
    StructResult,
    StructSpec,
    de_bool,
    de_enum,
    de_int,
    de_option,
    de_seq,
    de_string,
    de_struct,
    de_value,
    peek_invalid_type,
    peek_value,
)
from shellgate.router.decode.workdir import join_path


class FileSystemAccess(enum.StrEnum):
    """The access of one filesystem permission entry."""

    READ = "read"
    WRITE = "write"
    NONE = "none"


@dataclass(frozen=True)
class FsEntry:
    """One canonical-form filesystem permission entry."""

    path: str
    access: FileSystemAccess


@dataclass(frozen=True)
class FileSystemRequest:
    """Requested filesystem access: legacy `read`/`write` lists or canonical `entries`."""

    read: tuple[str, ...] | None = None
    write: tuple[str, ...] | None = None
    entries: tuple[FsEntry, ...] | None = None
    glob_scan_max_depth: int | None = None


@dataclass(frozen=True)
class AdditionalPermissions:
    """`additional_permissions`: optional network and filesystem requests."""

    network_enabled: bool | None = None
    has_network: bool = False
    file_system: FileSystemRequest | None = None

    @property
    def is_empty(self) -> bool:
        """Both members absent."""
        return not self.has_network and self.file_system is None


@dataclass(frozen=True)
class ShellCommandParams:
    """`ShellCommandToolCallParams`; `command` is a str or a batch tuple (decision 3a)."""

    command: str | tuple[str, ...]
    workdir: str | None = None
    login: bool | None = None
    timeout_ms: int | None = None
    sandbox_permissions: SandboxPermissions | None = None
    prefix_rule: tuple[str, ...] | None = None
    additional_permissions: AdditionalPermissions | None = None
    justification: str | None = None


@dataclass(frozen=True)
class ExecCommandParams:
    """`ExecCommandArgs` plus the `environment_id` of the first pass."""

    cmd: str
    workdir: str | None = None
    environment_id: str | None = None
    shell: str | None = None
    login: bool | None = None
    tty: bool = False
    yield_time_ms: int = 10_000
    max_output_tokens: int | None = None
    sandbox_permissions: SandboxPermissions | None = None
    additional_permissions: AdditionalPermissions | None = None
    justification: str | None = None
    prefix_rule: tuple[str, ...] | None = None


@dataclass(frozen=True)
class WriteStdinParams:
    """`WriteStdinArgs`."""

    session_id: int
    chars: str = ""
    yield_time_ms: int = 250
    max_output_tokens: int | None = None


DEFAULT_EXEC_YIELD_TIME_MS: Final = 10_000
DEFAULT_WRITE_STDIN_YIELD_TIME_MS: Final = 250
_FS_ENUM_NAME: Final = "FileSystemPermissions"
# A tuple, not a set: the value may be any JSON value, lists and maps included.
_ACCESS_MODES: Final = tuple(a.value for a in FileSystemAccess)


# --- field decoders ----------------------------------------------------------------------
def de_command(r: Reader) -> str | tuple[str, ...]:
    """`command`: a string, or a non-empty array of non-empty strings (decision 3a)."""
    peek = peek_value(r)
    if peek == 0x22:
        return de_string(r)
    if peek != 0x5B:
        raise peek_invalid_type(r, "a string")
    items = de_seq(de_value)(r)
    if not items:
        raise ProductError("`command` array must not be empty")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ProductError(f"`command[{i}]` must be a string")
        if item == "":
            raise ProductError(f"`command[{i}]` must not be empty")
    return tuple(items)


def fast_command(value: Any) -> str | tuple[str, ...]:
    """`de_command` over a parsed value (json_fast); only what it accepts unchanged."""
    if type(value) is str:
        return value
    if type(value) is not list or not value or not all(type(v) is str and v for v in value):
        raise Slow
    return tuple(value)


def _strings(r: Reader) -> tuple[str, ...]:
    return tuple(de_seq(de_string)(r))


_SANDBOX = de_enum([m.value for m in SandboxPermissions])


def _sandbox(r: Reader) -> SandboxPermissions:
    return SandboxPermissions(_SANDBOX(r))


def _no_match() -> JsonError:
    return JsonError(f"data did not match any variant of untagged enum {_FS_ENUM_NAME}")


def _path_list(value: Any, base: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise _no_match()
    return tuple(join_path(base, p) if base else p for p in value)


def _file_system(value: Any, base: str | None) -> FileSystemRequest:
    """The untagged FS enum: legacy `{read, write}` first, then canonical `{entries, …}`."""
    if not isinstance(value, dict):
        raise _no_match()
    if set(value) <= {"read", "write"}:
        return FileSystemRequest(
            read=_path_list(value.get("read"), base), write=_path_list(value.get("write"), base)
        )
    if "entries" not in value or not set(value) <= {"entries", "glob_scan_max_depth"}:
        raise _no_match()
    entries = value["entries"]
    depth = value.get("glob_scan_max_depth")
    if not isinstance(entries, list) or (
        depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0)
    ):
        raise _no_match()
    parsed: list[FsEntry] = []
    for entry in entries:
        if not (
            isinstance(entry, dict)
            and set(entry) == {"path", "access"}
            and isinstance(entry["path"], str)
            and entry["access"] in _ACCESS_MODES
        ):
            raise _no_match()
        path = join_path(base, entry["path"]) if base else entry["path"]
        parsed.append(FsEntry(path, FileSystemAccess(entry["access"])))
    return FileSystemRequest(entries=tuple(parsed), glob_scan_max_depth=depth)


_NETWORK_SPEC: Final = StructSpec(
    "NetworkPermissions", (Field("enabled", de_option(de_bool), seq_default=True),)
)


def additional_permissions_field(base_cwd: str | None) -> Decoder:
    """The `additional_permissions` decoder, resolving relative paths against `base_cwd`."""

    def fs(r: Reader) -> FileSystemRequest:
        return _file_system(de_value(r), base_cwd)

    spec = StructSpec(
        "AdditionalPermissionProfile",
        (
            Field("network", de_option(de_struct(_NETWORK_SPEC)), seq_default=True),
            Field("file_system", de_option(fs), seq_default=True),
        ),
    )
    decode_profile = de_struct(spec)

    def decode(r: Reader) -> AdditionalPermissions:
        result = decode_profile(r)
        network: StructResult | None = result.values["network"]
        return AdditionalPermissions(
            network_enabled=None if network is None else network.values["enabled"],
            has_network=network is not None,
            file_system=result.values["file_system"],
        )

    return de_option(decode)


def _opt(decoder: Decoder) -> Decoder:
    return de_option(decoder)


# Fast (parsed-value) twins of the field decoders, for json_fast's path.
_F_STR: Final = fast_option(fast_string)
_F_BOOL: Final = fast_option(fast_bool)
_F_U64: Final = fast_int(0, U64_MAX)
_F_I32: Final = fast_int(I32_MIN, I32_MAX)
_F_SANDBOX: Final = fast_option(
    fast_enum([m.value for m in SandboxPermissions], SandboxPermissions)
)
_F_STRINGS: Final = fast_option(fast_strings)


# --- struct layouts ----------------------------------------------------------------------
# Layouts are immutable and depend only on the base cwd (the permission-path anchor):
# build each once instead of twice per call (a few dozen frozen records each time).
SPEC_CACHE_SIZE = 64


@lru_cache(maxsize=SPEC_CACHE_SIZE)
def shell_command_spec(base_cwd: str | None) -> StructSpec:
    """`ShellCommandToolCallParams` (8 fields)."""
    return StructSpec(
        "ShellCommandToolCallParams",
        (
            Field("command", de_command, default=MISSING, fast=fast_command),
            Field("workdir", _opt(de_string), fast=_F_STR),
            Field("login", _opt(de_bool), fast=_F_BOOL),
            Field(
                "timeout_ms", _opt(de_int("u64")), aliases=("timeout",), fast=fast_option(_F_U64)
            ),
            Field("sandbox_permissions", _opt(_sandbox), seq_default=True, fast=_F_SANDBOX),
            Field("prefix_rule", _opt(_strings), seq_default=True, fast=_F_STRINGS),
            Field(
                "additional_permissions",
                additional_permissions_field(base_cwd),
                seq_default=True,
                fast=fast_null,
            ),
            Field("justification", _opt(de_string), fast=_F_STR),
        ),
    )


# Observed: `[]` → "invalid length 0, expected struct ToolEnvironmentArgs with 1 element".
TOOL_ENVIRONMENT_SPEC: Final = StructSpec(
    "ToolEnvironmentArgs", (Field("environment_id", _opt(de_string), fast=_F_STR),)
)
WORKDIR_SPEC: Final = StructSpec(
    "ExecWorkdirArgs", (Field("workdir", _opt(de_string), fast=_F_STR),)
)


@lru_cache(maxsize=SPEC_CACHE_SIZE)
def exec_command_spec(base_cwd: str | None) -> StructSpec:
    """`ExecCommandArgs` (11 fields; `environment_id` belongs to the first pass)."""
    return StructSpec(
        "ExecCommandArgs",
        (
            Field("cmd", de_string, default=MISSING, fast=fast_string),
            Field("workdir", _opt(de_string), seq_default=True, fast=_F_STR),
            Field("shell", _opt(de_string), seq_default=True, fast=_F_STR),
            Field("login", _opt(de_bool), seq_default=True, fast=_F_BOOL),
            Field("tty", de_bool, default=False, fast=fast_bool),
            Field("yield_time_ms", de_int("u64"), default=DEFAULT_EXEC_YIELD_TIME_MS, fast=_F_U64),
            Field(
                "max_output_tokens",
                _opt(de_int("usize")),
                seq_default=True,
                fast=fast_option(_F_U64),
            ),
            Field("sandbox_permissions", _opt(_sandbox), seq_default=True, fast=_F_SANDBOX),
            Field(
                "additional_permissions",
                additional_permissions_field(base_cwd),
                seq_default=True,
                fast=fast_null,
            ),
            Field("justification", _opt(de_string), seq_default=True, fast=_F_STR),
            Field("prefix_rule", _opt(_strings), seq_default=True, fast=_F_STRINGS),
        ),
    )


EXEC_KNOWN_KEYS: Final = frozenset(
    {f.name for f in exec_command_spec(None).fields} | {"environment_id"}
)

TERMINAL_SESSION_SPEC: Final = StructSpec(
    "TerminalSessionArgs", (Field("session_id", de_int("i32"), default=MISSING, fast=_F_I32),)
)
WRITE_STDIN_SPEC: Final = StructSpec(
    "WriteStdinArgs",
    (
        Field("session_id", de_int("i32"), default=MISSING, fast=_F_I32),
        Field("chars", de_string, default="", fast=fast_string),
        Field(
            "yield_time_ms", de_int("u64"), default=DEFAULT_WRITE_STDIN_YIELD_TIME_MS, fast=_F_U64
        ),
        Field(
            "max_output_tokens", _opt(de_int("usize")), seq_default=True, fast=fast_option(_F_U64)
        ),
    ),
)
