"""The `.rules` language: parsing as data, builtins, load errors and their renderings."""

from __future__ import annotations

import pytest
from shellgate.router.policy import (
    Decision,
    NetworkProtocol,
    RulesLoadError,
    check_multiple,
    load_rules,
    parse_policy,
)


def _error(text: str, path: str = "broken.rules") -> RulesLoadError:
    with pytest.raises(RulesLoadError) as info:
        parse_policy(text, path, home="/home/u")
    return info.value


def test_first_position_alternatives_make_one_rule_per_program() -> None:
    policy = parse_policy('prefix_rule(pattern=[["bash", "sh"], ["-c", "-l"]])')
    assert [r.first for r in policy.rules] == ["bash", "sh"]
    assert all(r.rest == (("-c", "-l"),) for r in policy.rules)


def test_one_element_alternative_is_a_plain_token() -> None:
    policy = parse_policy('prefix_rule(pattern=["git", ["status"]], decision="prompt")')
    assert policy.rules[0].rest == (("status",),)
    assert policy.rules[0].decision is Decision.PROMPT


def test_comments_variables_fstrings_concatenation_and_positional_args() -> None:
    text = """
# leading comment
tool = "make"  # trailing comment
flags = ["-j"] + ["4"]
prefix_rule([tool] + flags, "forbidden", justification = f"no {tool} here")
prefix_rule(pattern = [r"a\\b", '''c'''],)
"""
    policy = parse_policy(text)
    first, second = policy.rules
    assert (first.first, first.rest, first.decision) == (
        "make",
        (("-j",), ("4",)),
        Decision.FORBIDDEN,
    )
    assert first.justification == "no make here"
    assert (second.first, second.rest) == ("a\\b", (("c",),))


def test_files_are_never_executed() -> None:
    assert "Parse error" in _error('__import__("os").system("touch /tmp/pwned")').message
    err = _error('exec("print(1)")')
    assert "Variable `exec` not found" in err.message
    assert _error("def f():\n    pass").message.startswith("Parse error")


def test_parse_error_has_file_line_and_column() -> None:
    err = _error('prefix_rule(pattern=["a"], decision="allow")\nprefix_rule(pattern=["a"')
    assert err.line == 2
    assert " --> broken.rules:2:25" in str(err)
    assert "Parse error: unexpected new line, expected symbol ']'" in err.message
    assert err.render().startswith("broken.rules:2: ")
    assert "(problem is on or around line 2)" in err.render()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prefix_rule(pattern=[])", "invalid pattern element: pattern cannot be empty"),
        (
            "prefix_rule(pattern=[[]])",
            "invalid pattern element: pattern alternatives cannot be empty",
        ),
        (
            "prefix_rule(pattern=[1])",
            "invalid pattern element: pattern element must be a string or list of strings (got int)",
        ),
        ('prefix_rule(pattern=["a"], decision="deny")', "invalid decision: deny"),
        (
            'prefix_rule(pattern=["a"], justification=" ")',
            "invalid rule: justification cannot be empty",
        ),
        (
            'host_executable(name="/usr/bin/git", paths=[])',
            "invalid rule: host_executable name must be a bare executable name (got /usr/bin/git)",
        ),
        (
            'host_executable(name="git", paths=["/usr/bin/rg"])',
            "invalid rule: host_executable path `/usr/bin/rg` must have basename `git`",
        ),
        (
            'host_executable(name="git", paths=["bin/git"])',
            "invalid rule: host_executable paths must be absolute or use `~/...` home-relative syntax",
        ),
        (
            'network_rule(host="*.example.com", protocol="http", decision="allow")',
            "network_rule host must be a specific host; wildcards are not allowed",
        ),
        (
            'prefix_rule(pattern=["a"], match=[""])',
            "invalid example: example cannot be an empty string",
        ),
        ('prefix_rule(decision="allow")', "Missing parameter `pattern` for call to `prefix_rule`"),
    ],
)
def test_builtin_errors(text: str, message: str) -> None:
    err = _error(text)
    assert message in err.message
    assert f"error: {err.message}" in err.render()
    assert err.render().startswith("broken.rules:1: error: ")
    assert err.render().endswith("(problem is on or around line 1)")


def test_multiline_call_error_points_at_the_call_start() -> None:
    err = _error('\n\nprefix_rule(\n    pattern=["a"],\n    decision="nope",\n)\n')
    assert err.line == 3
    assert "3 | / prefix_rule(" in str(err)


def test_examples_are_validated_against_the_calls_own_rules() -> None:
    parse_policy(
        'prefix_rule(pattern=["git", "status"], match=["git status -s"], not_match=["git log"])'
    )
    err = _error('prefix_rule(pattern=["git", "status"], match=[["git", "log"]])')
    assert err.message.startswith("expected every example to match at least one rule.")
    assert 'unmatched examples: ["git log"]' in err.message
    err = _error('x = 1\nprefix_rule(pattern=["git"], not_match=["git status"])')
    assert err.message.startswith("expected example to not match rule `PrefixRuleMatch")
    assert err.render().startswith("broken.rules:2: expected example")


def test_match_examples_see_host_executables_with_resolution_on() -> None:
    text = (
        'host_executable(name="git", paths=["/usr/bin/git"])\n'
        'prefix_rule(pattern=["git"], match=[["/usr/bin/git", "status"]],'
        ' not_match=[["/opt/bin/git"]])'
    )
    assert len(parse_policy(text).rules) == 1


def test_host_executable_home_relative_paths_dedupe_and_last_wins() -> None:
    text = (
        'host_executable(name="git", paths=["/x/git"])\n'
        'host_executable(name="git", paths=["~/bin/git", "/usr/bin/git", "/usr//bin/git"])'
    )
    policy = parse_policy(text, home="/home/u")
    assert policy.host_executables == {"git": ("/home/u/bin/git", "/usr/bin/git")}


def test_network_rules_normalise_and_compile() -> None:
    text = """
network_rule(host="API.Example.com.", protocol="https_connect", decision="allow")
network_rule(host="x.test:8080", protocol="socks5_tcp", decision="deny")
network_rule(host="api.example.com", protocol="http", decision="prompt")
network_rule(host="y.test", protocol="http", decision="allow", justification="y")
"""
    policy = parse_policy(text)
    assert [r.host for r in policy.network_rules] == [
        "api.example.com",
        "x.test",
        "api.example.com",
        "y.test",
    ]
    assert policy.network_rules[0].protocol is NetworkProtocol.HTTPS
    assert policy.network_rules[1].decision is Decision.FORBIDDEN
    # A prompt rule leaves an earlier allow of the same host in force (Codex: Prompt => {}).
    assert policy.compiled_network_domains() == (("api.example.com", "y.test"), ("x.test",))


def test_several_files_form_one_policy_in_order() -> None:
    policy = load_rules(
        [
            ("a.rules", 'prefix_rule(pattern=["git"], decision="prompt")'),
            ("b.rules", 'prefix_rule(pattern=["git", "commit"], decision="forbidden")'),
        ]
    )
    ev = check_multiple(
        policy, [["git", "commit", "-m", "x"]], None, resolve_host_executables=False
    )
    assert ev.decision is Decision.FORBIDDEN
    assert [m.decision for m in ev.matched_rules] == [Decision.PROMPT, Decision.FORBIDDEN]
    with pytest.raises(RulesLoadError) as info:
        load_rules([("ok.rules", ""), ("bad.rules", "prefix_rule(pattern=[])")])
    assert info.value.path == "bad.rules"


def test_deep_nesting_is_bounded() -> None:
    err = _error("prefix_rule(pattern=" + "[" * 200 + "]" * 200 + ")")
    assert "nesting too deep" in err.message
