"""Child environment construction from the shell environment policy (spec 03 §A.2–§A.3, 05 §5.5).

Pure: the caller passes the parent environment in. Shared by the router (local children,
and the policy/overlay it sends) and the exec-server daemon (remote children).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

__all__ = [
    "CODEX_CI_ENV_VAR",
    "CODEX_PERMISSION_PROFILE_ENV_VAR",
    "CODEX_THREAD_ID_ENV_VAR",
    "CODEX_TOOL_CALL_ID_ENV_VAR",
    "DEFAULT_EXCLUDES",
    "NON_INHERITABLE_ENV_VARS",
    "UNIFIED_EXEC_ENV",
    "Inherit",
    "ShellEnvironmentPolicy",
    "apply_unified_exec_env",
    "create_env",
    "exec_server_child_env",
    "exec_server_env_overlay",
    "exec_server_env_payload",
    "exec_server_env_policy",
    "inject_permission_profile_env",
    "pattern_matches",
    "with_tool_call_id",
]

CODEX_THREAD_ID_ENV_VAR = "CODEX_THREAD_ID"
CODEX_TOOL_CALL_ID_ENV_VAR = "CODEX_TOOL_CALL_ID"
CODEX_PERMISSION_PROFILE_ENV_VAR = "CODEX_PERMISSION_PROFILE"
CODEX_CI_ENV_VAR = "CODEX_CI"

# Decision 3b: stripped unless `ignore_default_excludes` is set.
DEFAULT_EXCLUDES = ("*KEY*", "*SECRET*", "*TOKEN*")

# Step 7: credentials of the runtime itself; neither inheritance nor `set` brings them back.
NON_INHERITABLE_ENV_VARS = (
    "CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN",
    "NODE_REPL_AUTH_TOKEN",
    "OPENAI_FEDERATION_RULE_ID",
    "OPENAI_IDENTITY_TOKEN_FILE",
    "OPENAI_WORKLOAD_IDENTITY_CONTEXT",
)

_UNIX_CORE = (
    "PATH",
    "SHELL",
    "TMPDIR",
    "TEMP",
    "TMP",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LOGNAME",
    "USER",
)
_WINDOWS_CORE = (
    "PATH",
    "PATHEXT",
    "SHELL",
    "COMSPEC",
    "SYSTEMROOT",
    "WINDIR",
    "SYSTEMDRIVE",
    "USERNAME",
    "USERDOMAIN",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "PROGRAMDATA",
    "LOCALAPPDATA",
    "APPDATA",
    "TEMP",
    "TMP",
    "TMPDIR",
    "POWERSHELL",
    "PWSH",
)
_WINDOWS_DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD"

# Spec 03 §A.3: inserted or overwritten for exec_command only, in this order.
UNIFIED_EXEC_ENV: tuple[tuple[str, str], ...] = (
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("LANG", "C.UTF-8"),
    ("LC_CTYPE", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("COLORTERM", ""),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    (CODEX_CI_ENV_VAR, "1"),
)


class Inherit(enum.StrEnum):
    """Which parent variables start the child environment."""

    ALL = "all"
    CORE = "core"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class ShellEnvironmentPolicy:
    """The `[shell_environment_policy]` configuration (shellgate defaults)."""

    inherit: Inherit = Inherit.ALL
    ignore_default_excludes: bool = False
    exclude: tuple[str, ...] = ()
    # `set` as ordered pairs so the policy stays hashable; see `set_vars`.
    set_pairs: tuple[tuple[str, str], ...] = field(default=())
    include_only: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        *,
        inherit: Inherit | str = Inherit.ALL,
        ignore_default_excludes: bool = False,
        exclude: Iterable[str] = (),
        set_vars: Mapping[str, str] | None = None,
        include_only: Iterable[str] = (),
    ) -> ShellEnvironmentPolicy:
        """A policy from plain values."""
        return cls(
            inherit=Inherit(inherit),
            ignore_default_excludes=ignore_default_excludes,
            exclude=tuple(exclude),
            set_pairs=tuple((set_vars or {}).items()),
            include_only=tuple(include_only),
        )

    @property
    def set_vars(self) -> dict[str, str]:
        """The `set` map (also the "explicit overrides" later steps must not drop)."""
        return dict(self.set_pairs)


def _is_windows(platform: str) -> bool:
    return platform.lower().startswith("win")


def _regex(pattern: str) -> str:
    # `*` any run, `?` one character, everything else literal; no character classes.
    return "".join("." if ch == "?" else ".*" if ch == "*" else re.escape(ch) for ch in pattern)


@lru_cache(maxsize=256)
def _compile(patterns: tuple[str, ...]) -> re.Pattern[str]:
    # One alternation per pattern list: a name is tested once, not once per pattern
    # (every spawn filters the whole environment through three excludes and more).
    alternatives = "|".join(f"(?:{_regex(p)})" for p in patterns)
    return re.compile(alternatives, re.IGNORECASE | re.DOTALL)


def pattern_matches(pattern: str, name: str) -> bool:
    """Whether the whole `name` matches the glob `pattern`, ignoring case."""
    return _compile((pattern,)).fullmatch(name) is not None


def _matches_any(patterns: tuple[str, ...], name: str) -> bool:
    return bool(patterns) and _compile(patterns).fullmatch(name) is not None


def _remove_ignoring_case(env: dict[str, str], names: Iterable[str]) -> None:
    folded = {n.casefold() for n in names}
    for key in [k for k in env if k.casefold() in folded]:
        del env[key]


def create_env(
    vars: Mapping[str, str],
    policy: ShellEnvironmentPolicy,
    thread_id: str | None,
    platform: str = "unix",
) -> dict[str, str]:
    """The child environment, exactly in the order of spec 03 §A.2."""
    windows = _is_windows(platform)
    # 1. Inherit.
    if policy.inherit is Inherit.ALL:
        env = dict(vars)
    elif policy.inherit is Inherit.NONE:
        env = {}
    else:
        core = {n.casefold() for n in (_WINDOWS_CORE if windows else _UNIX_CORE)}
        env = {k: v for k, v in vars.items() if k.casefold() in core}
    # 2. Default excludes (decision 3b), 3. exclude.
    if not policy.ignore_default_excludes:
        env = {k: v for k, v in env.items() if not _matches_any(DEFAULT_EXCLUDES, k)}
    if policy.exclude:
        env = {k: v for k, v in env.items() if not _matches_any(policy.exclude, k)}
    # 4. Set (on Windows a key differing only in case is replaced, not duplicated).
    for key, value in policy.set_pairs:
        if windows:
            _remove_ignoring_case(env, [key])
        env[key] = value
    # 5. Include-only (may drop `set` entries).
    if policy.include_only:
        env = {k: v for k, v in env.items() if _matches_any(policy.include_only, k)}
    # 6. Thread id after include-only, so it always survives.
    if thread_id is not None:
        env[CODEX_THREAD_ID_ENV_VAR] = thread_id
    # 7. Final scrub.
    _remove_ignoring_case(env, NON_INHERITABLE_ENV_VARS)
    # 8. Windows needs PATHEXT to find executables.
    if windows and not any(k.upper() == "PATHEXT" for k in env):
        env["PATHEXT"] = _WINDOWS_DEFAULT_PATHEXT
    return env


def inject_permission_profile_env(
    env: Mapping[str, str], active_profile: str | None, platform: str = "unix"
) -> dict[str, str]:
    """Replace `CODEX_PERMISSION_PROFILE` with the active named profile, if any."""
    out = dict(env)
    if _is_windows(platform):
        # Windows names are case-insensitive: a differently cased key is the same variable.
        _remove_ignoring_case(out, [CODEX_PERMISSION_PROFILE_ENV_VAR])
    else:
        out.pop(CODEX_PERMISSION_PROFILE_ENV_VAR, None)
    if active_profile is not None:
        out[CODEX_PERMISSION_PROFILE_ENV_VAR] = active_profile
    return out


def apply_unified_exec_env(env: Mapping[str, str]) -> dict[str, str]:
    """Insert or overwrite the ten fixed unified-exec values (spec 03 §A.3)."""
    out = dict(env)
    out.update(UNIFIED_EXEC_ENV)
    return out


def with_tool_call_id(env: Mapping[str, str], call_id: str) -> dict[str, str]:
    """Set `CODEX_TOOL_CALL_ID` for the command being run, overriding any inherited value."""
    out = dict(env)
    out[CODEX_TOOL_CALL_ID_ENV_VAR] = call_id
    return out


# --- exec-server (remote children, spec 05 §5.5) ------------------------------------------

_RUNTIME_OWNED = (CODEX_PERMISSION_PROFILE_ENV_VAR,)


def exec_server_env_policy(policy: ShellEnvironmentPolicy) -> ShellEnvironmentPolicy:
    """The policy as sent to a daemon: runtime-owned keys excluded, scrubbed names unset."""
    blocked = {n.casefold() for n in (*_RUNTIME_OWNED, *NON_INHERITABLE_ENV_VARS)}
    return replace(
        policy,
        exclude=(*policy.exclude, *_RUNTIME_OWNED),
        set_pairs=tuple((k, v) for k, v in policy.set_pairs if k.casefold() not in blocked),
    )


def exec_server_env_overlay(
    policy_env: Mapping[str, str],
    request_env: Mapping[str, str],
    *,
    shell_snapshot: bool = False,
    policy_sets_path: bool = False,
) -> dict[str, str]:
    """The client's deltas: request entries the policy alone would not produce."""
    scrubbed = {n.casefold() for n in NON_INHERITABLE_ENV_VARS}
    overlay: dict[str, str] = {}
    for key, value in request_env.items():
        if key.casefold() in scrubbed:
            continue
        if key in _RUNTIME_OWNED or policy_env.get(key) != value:
            overlay[key] = value
    # A shell snapshot restores PATH itself unless the policy pins it (never in shellgate).
    if shell_snapshot and not policy_sets_path:
        overlay.pop("PATH", None)
    return overlay


def exec_server_child_env(
    server_env: Mapping[str, str],
    env_policy: ShellEnvironmentPolicy | None,
    overlay: Mapping[str, str],
    platform: str = "unix",
) -> dict[str, str]:
    """A remote child's env: exactly the overlay, or the daemon-side policy env + overlay."""
    if env_policy is None:
        return dict(overlay)
    env = create_env(server_env, env_policy, None, platform)
    env.update(overlay)
    return env


def exec_server_env_payload(
    request_env: Mapping[str, str],
    client_env: Mapping[str, str],
    policy: ShellEnvironmentPolicy,
    platform: str = "unix",
) -> tuple[ShellEnvironmentPolicy, dict[str, str]]:
    """What the client sends for a remote start: the policy as sent and its overlay.

    `client_env` is the client's own environment: the overlay is what `request_env` adds
    to the env the sent policy alone produces there (no thread id).
    """
    sent = exec_server_env_policy(policy)
    baseline = create_env(client_env, sent, None, platform)
    return sent, exec_server_env_overlay(baseline, request_env)
