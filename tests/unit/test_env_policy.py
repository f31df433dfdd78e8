"""Environment construction (spec 03 §A.2–§A.3) and the exec-server env (05 §5.5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.env_policy import (
    Inherit,
    ShellEnvironmentPolicy,
    apply_unified_exec_env,
    create_env,
    exec_server_child_env,
    exec_server_env_overlay,
    exec_server_env_payload,
    exec_server_env_policy,
    inject_permission_profile_env,
    pattern_matches,
)

P = ShellEnvironmentPolicy.build


def test_patterns_are_whole_name_case_insensitive_globs() -> None:
    assert pattern_matches("*KEY*", "monkey")
    assert pattern_matches("A?C", "abc")
    assert not pattern_matches("A?C", "abbc")
    assert not pattern_matches("PATH", "MYPATH")
    # No character classes: brackets are literal.
    assert pattern_matches("[x]", "[X]")
    assert not pattern_matches("[x]", "x")


names = st.text(alphabet="abAB_?*|().", max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(names, max_size=4), names)
def test_a_pattern_list_matches_a_name_when_one_pattern_matches_it_whole(
    patterns: list[str], name: str
) -> None:
    # Exclude and include-only test a name against a whole list at once.
    env = {name: "v"} if name else {}
    kept = create_env(env, P(ignore_default_excludes=True, exclude=patterns), None)
    assert (name in kept) == (bool(name) and not any(pattern_matches(p, name) for p in patterns))
    only = create_env(env, P(ignore_default_excludes=True, include_only=patterns), None)
    # An empty include-only list filters nothing.
    included = not patterns or any(pattern_matches(p, name) for p in patterns)
    assert (name in only) == (bool(name) and included)


def test_default_excludes_on_by_default() -> None:
    env = {"PATH": "/bin", "API_KEY": "k", "my_token": "t", "MONKEY": "m", "SECRET": "s"}
    assert create_env(env, P(), None) == {"PATH": "/bin"}
    assert create_env(env, P(ignore_default_excludes=True), None) == env


def test_core_inherit_keeps_original_casing() -> None:
    env = {"Path": "/bin", "home": "/h", "EDITOR": "vi"}
    assert create_env(env, P(inherit="core"), None) == {"Path": "/bin", "home": "/h"}
    win = {"ComSpec": "cmd.exe", "EDITOR": "vi", "PATHEXT": ".EXE"}
    assert create_env(win, P(inherit=Inherit.CORE), None, "windows") == {
        "ComSpec": "cmd.exe",
        "PATHEXT": ".EXE",
    }


def test_order_of_steps() -> None:
    env = {"PATH": "/bin", "HOME": "/h", "FOO_A": "1", "CODEX_THREAD_ID": "stale"}
    policy = P(
        exclude=["foo_*"], set_vars={"FOO_B": "2", "KEEP": "k"}, include_only=["FOO*", "PATH"]
    )
    # set after exclude, include-only after set, thread id after include-only.
    assert create_env(env, policy, "t1") == {"PATH": "/bin", "FOO_B": "2", "CODEX_THREAD_ID": "t1"}


def test_final_scrub_beats_set_and_inheritance() -> None:
    env = {"node_repl_auth_token": "x", "OPENAI_IDENTITY_TOKEN_FILE": "/f", "PATH": "/bin"}
    policy = P(ignore_default_excludes=True, set_vars={"OPENAI_FEDERATION_RULE_ID": "r"})
    assert create_env(env, policy, None) == {"PATH": "/bin"}


def test_windows_set_replaces_case_variant_and_adds_pathext() -> None:
    env = {"Path": "C:\\old"}
    got = create_env(env, P(set_vars={"PATH": "C:\\new"}), None, "windows")
    assert got == {"PATH": "C:\\new", "PATHEXT": ".COM;.EXE;.BAT;.CMD"}
    assert create_env(env, P(set_vars={"PATH": "/new"}), None, "unix") == {
        "Path": "C:\\old",
        "PATH": "/new",
    }


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("ABKEYTOSCRx_", min_size=1, max_size=8), st.text(max_size=3)),
    st.sampled_from(["all", "core", "none"]),
    st.booleans(),
    st.one_of(st.none(), st.text("abc", min_size=1, max_size=4)),
)
def test_thread_id_always_survives_and_secrets_never_do(
    env: dict[str, str], inherit: str, ignore: bool, thread_id: str | None
) -> None:
    got = create_env(env, P(inherit=inherit, ignore_default_excludes=ignore), thread_id)
    if thread_id is not None:
        assert got["CODEX_THREAD_ID"] == thread_id
    if not ignore:
        for key in got:
            if key != "CODEX_THREAD_ID":
                assert not any(w in key.upper() for w in ("KEY", "SECRET", "TOKEN"))
    assert set(got) - {"CODEX_THREAD_ID"} <= set(env)


def test_permission_profile_and_unified_values() -> None:
    assert inject_permission_profile_env({"CODEX_PERMISSION_PROFILE": "old", "A": "1"}, None) == {
        "A": "1"
    }
    assert inject_permission_profile_env({}, "p1") == {"CODEX_PERMISSION_PROFILE": "p1"}
    got = apply_unified_exec_env({"TERM": "xterm", "HOME": "/h"})
    assert got["TERM"] == "dumb" and got["COLORTERM"] == "" and got["CODEX_CI"] == "1"
    assert got["HOME"] == "/h" and len(got) == 11


def test_policy_as_sent() -> None:
    sent = exec_server_env_policy(
        P(set_vars={"codex_permission_profile": "x", "KEEP": "v", "NODE_REPL_AUTH_TOKEN": "t"})
    )
    assert sent.exclude == ("CODEX_PERMISSION_PROFILE",)
    assert sent.set_vars == {"KEEP": "v"}


def test_overlay_and_child_env() -> None:
    policy_env = {"HOME": "/c", "PATH": "/p", "CODEX_PERMISSION_PROFILE": "prof"}
    request = {
        "HOME": "/c",
        "PATH": "/sandbox",
        "CODEX_PERMISSION_PROFILE": "prof",
        "CODEX_THREAD_ID": "t",
        "NODE_REPL_AUTH_TOKEN": "never",
    }
    overlay = exec_server_env_overlay(policy_env, request)
    assert overlay == {
        "PATH": "/sandbox",
        "CODEX_PERMISSION_PROFILE": "prof",
        "CODEX_THREAD_ID": "t",
    }
    assert "PATH" not in exec_server_env_overlay(policy_env, request, shell_snapshot=True)
    child = exec_server_child_env(
        {"PATH": "/srv", "HOME": "/srv", "X": "daemon"},
        P(inherit="none", set_vars={"POLICY_SET": "policy"}),
        {"OVERLAY": "o", "POLICY_SET": "overlay-wins"},
    )
    assert child == {"POLICY_SET": "overlay-wins", "OVERLAY": "o"}
    assert exec_server_child_env({"PATH": "/srv"}, None, {"A": "1"}) == {"A": "1"}


def test_payload_sends_only_deltas() -> None:
    client = {"PATH": "/bin", "HOME": "/h"}
    policy = P()
    request = apply_unified_exec_env(create_env(client, policy, "t1"))
    sent, overlay = exec_server_env_payload(request, client, policy)
    assert "HOME" not in overlay and "PATH" not in overlay
    assert overlay["CODEX_THREAD_ID"] == "t1" and overlay["TERM"] == "dumb"
    # The daemon rebuilds the same env from its own variables plus the overlay.
    assert exec_server_child_env(client, sent, overlay) == request
