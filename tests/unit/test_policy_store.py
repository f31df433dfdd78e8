"""Rules on disk: ordered folders, last good policy on a broken reload, amendments (the lock
across writer processes: tests/integration/test_policy_store_writers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shellgate.router.policy import AmendError, Decision, RulesLoadError, check_multiple
from shellgate.router.service.rules_store import PolicyStore, append_rule_line, rules_files


def _decision(store: PolicyStore, argv: list[str]) -> Decision | None:
    return check_multiple(store.policy, [argv], None, resolve_host_executables=True).decision


def test_files_load_in_folder_order_then_name_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (b / "00.rules").write_text('prefix_rule(pattern=["git"], decision="forbidden")\n')
    (a / "z.rules").write_text('prefix_rule(pattern=["git"], decision="allow")\n')
    (a / "m.rules").write_text('prefix_rule(pattern=["ls"])\n')
    (a / "sub" / "x.rules").write_text("broken(\n")
    (a / "notes.txt").write_text("ignored")
    assert [p.name for p in rules_files([a, b])] == ["m.rules", "z.rules", "00.rules"]
    store = PolicyStore([a, b])
    store.load_initial()
    assert _decision(store, ["git", "status"]) is Decision.FORBIDDEN


def test_broken_file_refuses_start_but_reload_keeps_last_good(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "a.rules").write_text('prefix_rule(pattern=["rm"], decision="forbidden")\n')
    store = PolicyStore([rules])
    store.load_initial()
    (rules / "b.rules").write_text('\nprefix_rule(pattern=["x"], decision="nope")\n')
    result = store.reload()
    assert not result.ok
    assert result.error is not None and "b.rules:2: error: invalid decision: nope" in result.error
    assert store.last_error == result.error and store.reload_errors == 1
    assert _decision(store, ["rm", "x"]) is Decision.FORBIDDEN  # nothing silently dropped
    with pytest.raises(RulesLoadError):
        PolicyStore([rules]).load_initial()
    (rules / "b.rules").unlink()
    assert store.reload().ok and store.last_error is None


def test_amendments_append_dedupe_and_apply_live(tmp_path: Path) -> None:
    first, second = tmp_path / "first" / "rules", tmp_path / "second"
    second.mkdir()
    store = PolicyStore([first, second])
    store.load_initial()
    assert store.append_prefix_rule(["echo", "Hello, world!"]).ok
    store.append_prefix_rule(["echo", "Hello, world!"])
    store.append_network_rule(" api.example.com ", "https", "allow", "Allow API calls")
    assert (first / "default.rules").read_text() == (
        'prefix_rule(pattern=["echo", "Hello, world!"], decision="allow")\n'
        'network_rule(host="api.example.com", protocol="https", decision="allow", '
        'justification="Allow API calls")\n'
    )
    assert _decision(store, ["echo", "Hello, world!", "x"]) is Decision.ALLOW
    with pytest.raises(AmendError) as info:
        store.append_prefix_rule([])
    assert info.value.kind == "EmptyPrefix"
    with pytest.raises(AmendError) as info:
        store.append_network_rule("h", "https", "prompt")
    assert info.value.kind == "InvalidNetworkDecision"


def test_missing_final_newline_is_added_first(tmp_path: Path) -> None:
    path = tmp_path / "default.rules"
    path.write_text('prefix_rule(pattern=["ls"], decision="allow")')
    assert append_rule_line(path, 'prefix_rule(pattern=["pwd"], decision="allow")')
    assert path.read_text() == (
        'prefix_rule(pattern=["ls"], decision="allow")\nprefix_rule(pattern=["pwd"], decision="allow")\n'
    )
