"""Corpus for the `policy check` differential test: rules files × commands."""

from __future__ import annotations

RULES: dict[str, str] = {
    "alternatives": """
# first-position alternatives give one rule per program; later ones match in place
prefix_rule(pattern = [["bash", "sh"], ["-c", "-l"]])
prefix_rule(
    pattern = ["npm", ["i", "install"], ["--legacy-peer-deps", "--no-save"]],
    decision = "prompt",
)
prefix_rule(pattern=["git", ["status", "log", "diff"]], decision="allow", justification="read only")
prefix_rule(pattern=["git", "push"], decision="prompt")
prefix_rule(pattern=["git", "push", ["--force", "-f"]], decision="forbidden", justification="no force pushes")
""",
    "mixed": """
prefix_rule(pattern=["rm"], decision="forbidden")
prefix_rule(pattern=["rm", "-i"], decision="prompt")
prefix_rule(pattern=["curl"], decision="forbidden", justification="no network tools")
prefix_rule(pattern=["ls"], justification="safe and commonly used")
prefix_rule(pattern=["cargo", "test"], match=["cargo test --all"], not_match=["cargo build"])
prefix_rule(pattern=["cargo"], decision="prompt")
prefix_rule(pattern=['python3', '-m', ['pytest', 'mypy']], decision='allow')
""",
    "hosts": """
prefix_rule(pattern=["git", "status"], decision="prompt")
prefix_rule(pattern=["git"], decision="allow")
host_executable(name="git", paths=["/usr/bin/git", "/opt/git/bin/git", "/usr/bin/git"])
prefix_rule(pattern=["rg"], decision="forbidden")
prefix_rule(pattern=["find", "."], decision="prompt")
host_executable(name="find", paths=[])
""",
    "nohosts": """
prefix_rule(pattern=["git"], decision="prompt")
prefix_rule(pattern=["/usr/bin/git", "status"], decision="forbidden")
prefix_rule(pattern=["tar", ["-x", "-xf", "xzf"]], decision="prompt", justification="extracts files")
prefix_rule(pattern=["echo", "hello world"], decision="forbidden")
""",
    "network_and_more": """
network_rule(host="api.example.com", protocol="https", decision="allow")
network_rule(host="Blocked.Example.com:443", protocol="http-connect", decision="deny", justification="blocked")
prefix_rule(pattern=["docker", ["run", "exec"], "--privileged"], decision="forbidden")
prefix_rule(pattern=["docker"], decision="prompt")
prefix_rule(pattern=["sudo"], decision="forbidden")
prefix_rule(pattern=["kubectl", "get"], match=[["kubectl", "get", "pods"]])
x = "make"
prefix_rule(pattern=[x, "install"], decision="prompt")
prefix_rule(pattern=[f"{x}-dev"], decision="forbidden")
""",
    "wrappers": """
prefix_rule(pattern=["sudo"], decision="prompt")
prefix_rule(pattern=["sudo", "rm"], decision="forbidden", justification="no root deletes")
prefix_rule(pattern=["env"], decision="allow")
prefix_rule(pattern=["bash", "-lc"], decision="prompt")
prefix_rule(pattern=["rm"], decision="forbidden")
prefix_rule(pattern=["timeout"], decision="allow")
prefix_rule(pattern=["xargs", "-0", "rm"], decision="forbidden")
""",
    "unicode": """
prefix_rule(pattern=["écho", "ünï"], decision="prompt", justification="non-ascii ✓")
prefix_rule(pattern=["printf", "a\\tb"], decision="forbidden")
prefix_rule(pattern=["sed", "-i"], decision="prompt", justification='edits "in place"')
""",
}

COMMANDS: list[list[str]] = [
    ["bash", "-c", "echo", "hi"],
    ["sh", "-l", "echo", "hi"],
    ["bash", "-lc", "echo hi"],
    ["sh", "-x"],
    ["npm", "install", "--no-save", "leftpad"],
    ["npm", "i", "--legacy-peer-deps"],
    ["npm", "install", "leftpad"],
    ["git", "status"],
    ["git", "log", "-n", "1"],
    ["git", "push", "origin", "main"],
    ["git", "push", "--force", "origin"],
    ["git", "push", "-f"],
    ["git"],
    ["git", "commit", "-m", "x"],
    ["/usr/bin/git", "status"],
    ["/usr/bin/git", "log"],
    ["/opt/git/bin/git", "status", "--short"],
    ["/usr/local/bin/git", "status"],
    ["/usr//bin/./git", "status"],
    ["/usr/bin/../bin/git", "push"],
    ["./git", "status"],
    ["rm", "-rf", "/tmp/x"],
    ["rm", "-i", "x"],
    ["/bin/rm", "-rf", "x"],
    ["curl", "https://example.com"],
    ["/usr/bin/curl", "-s"],
    ["ls"],
    ["ls", "-la"],
    ["cargo", "test", "--all"],
    ["cargo", "build"],
    ["python3", "-m", "pytest", "-q"],
    ["python3", "-m", "mypy"],
    ["python3", "-c", "print(1)"],
    ["rg", "foo"],
    ["/usr/bin/rg", "foo"],
    ["find", ".", "-name", "x"],
    ["/usr/bin/find", ".", "-name", "x"],
    ["tar", "-xf", "a.tgz"],
    ["tar", "xzf", "a.tgz"],
    ["tar", "-c", "a"],
    ["echo", "hello world"],
    ["echo", "hello", "world"],
    ["docker", "run", "--privileged", "img"],
    ["docker", "exec", "--privileged", "c"],
    ["docker", "ps"],
    ["sudo", "rm", "-rf", "/"],
    ["kubectl", "get", "pods"],
    ["make", "install"],
    ["make-dev"],
    ["écho", "ünï", "x"],
    ["printf", "a\tb"],
    ["sed", "-i", "s/a/b/", "f"],
    ["/usr/bin/sed", "-i", "x"],
    ["env", "FOO=1", "rm", "-rf", "x"],
    ["sudo", "-u", "root", "rm", "-rf", "x"],
    ["/usr/bin/sudo", "rm", "-rf", "x"],
    ["bash", "-lc", "sudo rm -rf /x"],
    ["timeout", "5", "rm", "-rf", "x"],
    ["xargs", "-0", "rm", "-f"],
    ["/bin/bash", "-lc", "git status"],
]

# Files that must fail to load; the differential test checks both tools fail and that the
# Starlark `error:` line agrees where shellgate reproduces it.
BROKEN: dict[str, str] = {
    "empty_pattern": "prefix_rule(pattern=[])",
    "bad_decision": 'prefix_rule(pattern=["git"], decision="deny")',
    "blank_justification": 'prefix_rule(pattern=["git"], justification="  ")',
    "int_element": "prefix_rule(pattern=[1])",
    "empty_alternatives": "prefix_rule(pattern=[[]])",
    "int_alternative": 'prefix_rule(pattern=[["a", 2]])',
    "missing_pattern": 'prefix_rule(decision="allow")',
    "string_pattern": 'prefix_rule(pattern="git")',
    "extra_kwarg": 'prefix_rule(pattern=["a"], bogus=1)',
    "bad_host_name": 'host_executable(name="/usr/bin/git", paths=["/usr/bin/git"])',
    "bad_basename": 'host_executable(name="git", paths=["/usr/bin/rg"])',
    "wildcard_host": 'network_rule(host="*", protocol="http", decision="allow")',
    "scheme_host": 'network_rule(host="http://x.com", protocol="http", decision="allow")',
    "bad_protocol": 'network_rule(host="x.com", protocol="ftp", decision="allow")',
    "empty_example": 'prefix_rule(pattern=["a"], match=[""])',
    "bad_example_syntax": 'prefix_rule(pattern=["a"], match=["a \\"b"])',
    "unclosed": 'prefix_rule(pattern=["a"',
    "match_fails": 'prefix_rule(pattern=["git", "status"], match=[["git", "log"]])',
    "not_match_fails": 'prefix_rule(pattern=["git"], not_match=["git status"])',
    "unknown_name": "foo(1)",
}

# Exact texts shellgate reproduces for the broken files above (the line after `error: `, or the
# whole message for example-validation errors).
SAME_MESSAGE = {
    "empty_pattern",
    "bad_decision",
    "blank_justification",
    "int_element",
    "empty_alternatives",
    "int_alternative",
    "missing_pattern",
    "string_pattern",
    "extra_kwarg",
    "bad_host_name",
    "bad_basename",
    "wildcard_host",
    "scheme_host",
    "bad_protocol",
    "empty_example",
    "bad_example_syntax",
    "unclosed",
    "match_fails",
    "not_match_fails",
}


def cases() -> list[tuple[str, list[str], bool]]:
    """(rules name, command, resolve_host_executables) for every combination."""
    out: list[tuple[str, list[str], bool]] = []
    for name in RULES:
        for command in COMMANDS:
            out.append((name, command, False))
            # Host resolution only changes absolute first tokens: check those both ways.
            if command[0].startswith("/"):
                out.append((name, command, True))
    return out
