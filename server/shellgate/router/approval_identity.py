"""Projection C: approval identity — V1 canonicalization and approval keys (spec 03 §C)."""

from __future__ import annotations

import enum
import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shellgate.router.bash.word_lowering import lower_script
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.handler.permissions import PermissionProfile
from shellgate.router.policy_projection import extract_bash_command, extract_powershell_command

SHELL_SCRIPT_SENTINEL = "__codex_shell_script__"
POWERSHELL_SCRIPT_SENTINEL = "__codex_powershell_script__"

JsonValue = None | bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]


def canonicalize_command_for_approval(argv: Sequence[str]) -> list[str]:
    """The approval-cache form of a command (variant V1); never executed or policy-matched."""
    extracted = extract_bash_command(argv)
    if extracted is not None:
        script = extracted[1]
        lowered = lower_script(script)
        if lowered is not None and len(lowered) == 1:
            return list(lowered[0].words)
        return [SHELL_SCRIPT_SENTINEL, argv[1], script]
    powershell = extract_powershell_command(argv)
    if powershell is not None:
        return [POWERSHELL_SCRIPT_SENTINEL, powershell]
    return list(argv)


# The string encoder of `json.dumps(..., ensure_ascii=False)`.
_encode_str = json.encoder.encode_basestring


def canonical_json(value: object) -> bytes:
    """Canonical JSON: sorted keys, no insignificant whitespace, UTF-8, no ASCII escaping.

    The one canonical-JSON writer: approval-key records, their digests, and any other value
    that must read and hash the same in every process go through it.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass keeps a lone surrogate (possible in decoded model input) from crashing
    # the digest; valid text encodes as plain UTF-8.
    return text.encode("utf-8", "surrogatepass")


def permission_profile_json(profile: PermissionProfile | None) -> dict[str, JsonValue] | None:
    """A profile as the JSON value approval keys record (entries sorted; None when absent)."""
    if profile is None:
        return None
    out: dict[str, JsonValue] = {"network": {"enabled": profile.network_enabled}}
    if profile.entries:
        out["file_system"] = [
            {"path": path, "access": access.value} for path, access in sorted(profile.entries)
        ]
    if profile.glob_scan_max_depth is not None:
        out["glob_scan_max_depth"] = profile.glob_scan_max_depth
    return out


class ApprovalKind(enum.StrEnum):
    """Which tool an approval key belongs to."""

    SHELL_COMMAND = "shell_command"
    EXEC_COMMAND = "exec_command"

    @property
    def namespace(self) -> str:
        """The approval-cache namespace of this kind."""
        return "shell" if self is ApprovalKind.SHELL_COMMAND else "unified_exec"


@dataclass(frozen=True, slots=True)
class ApprovalKey:
    """What "approved for session" remembers for a shell_command or exec_command call."""

    kind: ApprovalKind
    environment_id: str
    command: tuple[str, ...]
    # Absolute path for shell_command, path URI for exec_command (kept as given).
    cwd: str
    sandbox_permissions: SandboxPermissions
    # The normalized additional-permissions profile, or None.
    additional_permissions: PermissionProfile | None
    # Only exec_command keys carry tty; None for shell_command.
    tty: bool | None

    @property
    def namespace(self) -> str:
        """The approval-cache namespace (`shell` or `unified_exec`)."""
        return self.kind.namespace

    def to_json(self) -> dict[str, JsonValue]:
        """The key record that the digest covers (spec 06 §8)."""
        record: dict[str, JsonValue] = {
            "kind": self.kind.value,
            "environment_id": self.environment_id,
            "command": list(self.command),
            "cwd": self.cwd,
            "sandbox_permissions": self.sandbox_permissions.value,
            "additional_permissions": permission_profile_json(self.additional_permissions),
        }
        if self.kind is ApprovalKind.EXEC_COMMAND:
            record["tty"] = self.tty
        return record

    def digest(self) -> str:
        """Lowercase hex SHA-256 of the key's canonical JSON; stable across processes."""
        return hashlib.sha256(self.canonical()).hexdigest()

    def canonical(self) -> bytes:
        """`canonical_json(self.to_json())`, written directly for the common case.

        The direct form covers keys without a profile; a property test holds it byte-equal
        to `canonical_json` (tests/unit/test_approval_identity.py).
        """
        if self.additional_permissions is not None:
            return canonical_json(self.to_json())
        # The record's keys in sorted order; strings through the encoder json.dumps uses
        # with ensure_ascii=False, so the text is byte-identical.
        text = (
            '{"additional_permissions":null,"command":['
            + ",".join(map(_encode_str, self.command))
            + '],"cwd":' + _encode_str(self.cwd)
            + ',"environment_id":' + _encode_str(self.environment_id)
            + ',"kind":' + _encode_str(self.kind.value)
            + ',"sandbox_permissions":' + _encode_str(self.sandbox_permissions.value)
        )  # fmt: skip
        if self.kind is ApprovalKind.EXEC_COMMAND:
            text += ',"tty":' + ("null" if self.tty is None else "true" if self.tty else "false")
        return (text + "}").encode("utf-8", "surrogatepass")


def shell_command_approval_key(
    *,
    environment_id: str,
    argv: Sequence[str],
    cwd: str,
    sandbox_permissions: SandboxPermissions,
    additional_permissions: PermissionProfile | None,
) -> ApprovalKey:
    """The approval key of a shell_command handler command (effective permissions)."""
    return ApprovalKey(
        kind=ApprovalKind.SHELL_COMMAND,
        environment_id=environment_id,
        command=tuple(canonicalize_command_for_approval(argv)),
        cwd=cwd,
        sandbox_permissions=sandbox_permissions,
        additional_permissions=additional_permissions,
        tty=None,
    )


def exec_command_approval_key(
    *,
    environment_id: str,
    argv: Sequence[str],
    cwd_uri: str,
    tty: bool,
    sandbox_permissions: SandboxPermissions,
    additional_permissions: PermissionProfile | None,
) -> ApprovalKey:
    """The approval key of an exec_command handler command (effective permissions)."""
    return ApprovalKey(
        kind=ApprovalKind.EXEC_COMMAND,
        environment_id=environment_id,
        command=tuple(canonicalize_command_for_approval(argv)),
        cwd=cwd_uri,
        sandbox_permissions=sandbox_permissions,
        additional_permissions=additional_permissions,
        tty=tty,
    )


# --- the session cache key: shellgate's difference from Codex (docs/approvals.md) -------------

# Variables whose value changes which program a command runs, or what runs before or inside
# it (the shell's start-up files and hooks, the dynamic loader, interpreter start-up, git's
# helpers and config). Names compare in upper case (Windows names are case-insensitive).
RESOLUTION_ENV_NAMES = frozenset({
    "PATH", "CDPATH", "HOME", "BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS",
    "BASHOPTS", "IFS", "GLOBIGNORE", "PS4", "NODE_OPTIONS", "NODE_PATH", "PERL5LIB",
    "PERL5OPT", "PERLLIB", "RUBYOPT", "RUBYLIB", "GCONV_PATH", "LOCPATH",
    "JAVA_TOOL_OPTIONS", "GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_SSH",
    "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR", "GIT_SEQUENCE_EDITOR",
})  # fmt: skip
RESOLUTION_ENV_PREFIXES = ("LD_", "DYLD_", "PYTHON", "BASH_FUNC_", "GIT_CONFIG")

# (name, value) of a resolution variable; value None: the parent's variable was removed.
ResolutionEnv = tuple[tuple[str, str | None], ...]


# Names asked about are cached only up to this length: the cache keeps a caller's names,
# and 4 096 huge ones must not stay in memory.
_CACHED_NAME_CHARS = 128


def _names_resolution(name: str) -> bool:
    upper = name.upper()
    return upper in RESOLUTION_ENV_NAMES or upper.startswith(RESOLUTION_ENV_PREFIXES)


# Asked for every variable of the envelope and of the parent environment on each call
# (~80 names per Project, the same ones again and again): cached, each is a dict lookup
# (the in-process core over the bench corpus: 0.166 → 0.156 ms per projection).
_names_resolution_cached = functools.lru_cache(maxsize=4096)(_names_resolution)


def is_resolution_env_name(name: str) -> bool:
    """Whether a variable changes what a command resolves to or runs before it."""
    if len(name) <= _CACHED_NAME_CHARS:
        return _names_resolution_cached(name)
    return _names_resolution(name)


def resolution_env_overrides(
    env: Sequence[tuple[str, str]], parent: Sequence[tuple[str, str]]
) -> ResolutionEnv:
    """The resolution variables of a resolved env (the envelope's) that differ from `parent`.

    `parent` is what the router itself would give the command without a policy: its own
    environment for the local environment, nothing for a daemon (whose policy alone is
    known here). Set or changed values appear with their value, removed ones with None;
    sorted by name. Empty when the policy changed none of them.
    """
    resolved = {k: v for k, v in env if is_resolution_env_name(k)}
    base = {k: v for k, v in parent if is_resolution_env_name(k)}
    out: list[tuple[str, str | None]] = [(k, v) for k, v in resolved.items() if base.get(k) != v]
    out += [(k, None) for k in base if k not in resolved]
    return tuple(sorted(out))


def session_cache_digest(key_digest: str, overrides: ResolutionEnv) -> str:
    """What "approved for session" remembers: Codex's key digest, bound to the overrides.

    Without overrides this is Codex's digest unchanged; with them, the SHA-256 of the
    canonical JSON `{"approval_key": <digest>, "resolution_env": [[name, value|null], …]}`,
    so an approval under one PATH never covers the same command under another.
    """
    if not overrides:
        return key_digest
    record = {"approval_key": key_digest, "resolution_env": [[k, v] for k, v in overrides]}
    return hashlib.sha256(canonical_json(record)).hexdigest()


@dataclass(frozen=True, slots=True)
class SessionApprovalKey:
    """An element's approval key as the session cache holds it (Codex's key + overrides)."""

    key: ApprovalKey
    resolution_env: ResolutionEnv = ()

    @property
    def namespace(self) -> str:
        """The approval-cache namespace of Codex's key."""
        return self.key.namespace

    def digest(self) -> str:
        """`session_cache_digest(key.digest(), resolution_env)`."""
        return session_cache_digest(self.key.digest(), self.resolution_env)


@dataclass(frozen=True, slots=True)
class ApplyPatchApprovalKey:
    """What "approved for session" remembers for an apply_patch call (namespace apply_patch)."""

    environment_id: str
    patch: str
    cwd: str

    @property
    def namespace(self) -> str:
        """The approval-cache namespace."""
        return "apply_patch"

    def to_json(self) -> dict[str, object]:
        """The key record that the digest covers: `{kind, environment_id, patch, cwd}`."""
        return {
            "kind": "apply_patch",
            "environment_id": self.environment_id,
            "patch": self.patch,
            "cwd": self.cwd,
        }

    def digest(self) -> str:
        """Lowercase hex SHA-256 of the key's canonical JSON; stable across processes."""
        return hashlib.sha256(canonical_json(self.to_json())).hexdigest()
