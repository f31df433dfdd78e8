"""`shellgate serve`'s start-up banner and its sandbox refusal, from a parsed config."""

from __future__ import annotations

from pathlib import Path

from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.router.cli.banner import banner_lines, sandbox_refusal
from shellgate.router.service.config import parse_config


def test_banner_names_address_environments_sandbox_rules_and_a_call(tmp_path: Path) -> None:
    config = parse_config({
        "listen": "127.0.0.1:0", "local_cwd": str(tmp_path), "rules_dirs": [str(tmp_path)],
        "environments": [{"id": "build", "target": "127.0.0.1:7000"}],
        "defaults": {"permission_profile": "danger-full-access"},
    })  # fmt: skip
    rules = [tmp_path / "a.rules", tmp_path / "b.rules"]
    token = tmp_path / "router-4242.token"
    text = "\n".join(banner_lines(config, 4242, rules, token))
    assert "router listening on 127.0.0.1:4242" in text
    assert f"environments: local (embedded, cwd {tmp_path}), build (exec-server 127.0.0.1:7000)" in text
    assert "sandbox: default permission profile danger-full-access; local sandbox: none by default" in text
    assert f"rules: 2 .rules file(s) from {tmp_path}" in text
    assert f"auth: generated token in {token}" in text
    assert 'try: shellgate call --target 127.0.0.1:4242 --cmd "echo hello"' in text


def test_the_default_address_needs_no_target() -> None:
    config = parse_config({})
    assert banner_lines(config, 50051, None, None)[-1] == '  try: shellgate call --cmd "echo hello"'


def test_refusal_only_when_the_local_default_needs_a_missing_sandbox() -> None:
    remote_only = parse_config(
        {"local_environment": False, "environments": [{"id": "b", "target": "127.0.0.1:7000"}]}
    )
    unsandboxed = parse_config({"defaults": {"permission_profile": "danger-full-access"}})
    assert sandbox_refusal(remote_only) is None
    assert sandbox_refusal(unsandboxed) is None
    refusal = sandbox_refusal(parse_config({}))
    # This machine's answer decides which side is checked; the other runs in test_first_run.
    if sandbox_unavailable_reason():
        assert refusal is not None and "--sandbox danger-full-access" in refusal
    else:
        assert refusal is None


def test_the_banner_names_the_console_url_a_browser_here_opens() -> None:
    config = parse_config({"console_listen": "127.0.0.1:0"})
    lines = banner_lines(config, 50051, None, None, 8443)
    assert "  console: http://127.0.0.1:8443/ (log in with an operator token)" in lines
    # No console: no line.
    plain = banner_lines(parse_config({}), 50051, None, None)
    assert not any("console:" in line for line in plain)
