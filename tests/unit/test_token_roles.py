"""Token-file roles (docs/approvals.md): `subject token roles=operator`, hashed lines too."""

from __future__ import annotations

from pathlib import Path

import pytest
from shellgate.common.auth import Authenticator, hashed_token_line, load_tokens


def test_roles_parse_plain_and_hashed_lines(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(
        "# comment\n"
        "agent tok-a\n"
        "ops tok-o roles=operator\n"
        f"{hashed_token_line('sec', 'tok-s')} roles=operator\n"
        "bare-token\n"
    )
    entries = load_tokens(str(path))
    auth = Authenticator(entries, mtls=False)
    assert auth.roles("agent") == frozenset()
    assert auth.roles("ops") == {"operator"}
    assert auth.roles("sec") == {"operator"}
    assert auth.authenticate({"authorization": "Bearer tok-s"}, {}) == "sec"
    assert auth.authenticate({"authorization": "Bearer tok-a"}, {}) == "agent"
    assert "tok-o" not in repr(entries)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("ops tok roles=admin", "unknown role 'admin'"),
        ("ops tok operator", "expected `subject token [roles=operator]`"),
        ("ops tok roles=operator extra", "expected `subject token [roles=operator]`"),
    ],
)
def test_bad_roles_name_the_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"agent tok-a\n{line}\n")
    with pytest.raises(ValueError) as err:
        load_tokens(str(path))
    assert f"{path}:2" in str(err.value) and problem in str(err.value)


def test_mtls_operators_come_from_the_config() -> None:
    auth = Authenticator((), mtls=True, mtls_operators=("ops-cn",))
    assert auth.roles("ops-cn") == {"operator"}
    assert auth.roles("agent-cn") == frozenset()

