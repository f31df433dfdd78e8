"""The session cache key: Codex's approval key bound to the resolution-relevant env overrides."""

from __future__ import annotations

from shellgate.router.approval_identity import (
    is_resolution_env_name,
    resolution_env_overrides,
    session_cache_digest,
)

PARENT = (("PATH", "/usr/bin:/bin"), ("HOME", "/home/u"), ("LANG", "C"))


def test_names() -> None:
    for name in ("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP",
                 "BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS",
                 "NODE_OPTIONS", "PERL5LIB", "PERL5OPT", "RUBYOPT", "GIT_EXEC_PATH",
                 "GIT_CONFIG_GLOBAL", "GIT_SSH_COMMAND", "BASH_FUNC_touch%%", "Path"):  # fmt: skip
        assert is_resolution_env_name(name), name
    for name in ("LANG", "TERM", "NO_COLOR", "CODEX_THREAD_ID", "USER"):
        assert not is_resolution_env_name(name), name


def test_overrides_relative_to_the_parent() -> None:
    assert resolution_env_overrides(PARENT, PARENT) == ()
    # A changed LANG is no resolution override.
    assert resolution_env_overrides((*PARENT[:2], ("LANG", "C.UTF-8")), PARENT) == ()
    env = (("PATH", "/ws/bin:/usr/bin"), ("LANG", "C"), ("LD_PRELOAD", "/ws/x.so"))
    assert resolution_env_overrides(env, PARENT) == (
        ("HOME", None), ("LD_PRELOAD", "/ws/x.so"), ("PATH", "/ws/bin:/usr/bin"),
    )  # fmt: skip


def test_digest() -> None:
    key = "ab" * 32
    assert session_cache_digest(key, ()) == key
    a = session_cache_digest(key, (("PATH", "/a"),))
    b = session_cache_digest(key, (("PATH", "/b"),))
    removed = session_cache_digest(key, (("PATH", None),))
    assert len({key, a, b, removed}) == 4 and len(a) == 64
    assert a == session_cache_digest(key, (("PATH", "/a"),))
