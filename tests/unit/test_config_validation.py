"""Both daemons' config and flags: every mistake is one `config error:` line naming the key.

The rows are generated from the pydantic tables (ROUTER_TABLE, SERVER_TABLE), so a new key
gets its wrong-type rows without an edit here: each key with a wrong type, each enum with a
bad value, each bounded integer below its floor, unknown keys at every level. The mistakes
users reported are listed by hand. A few run through the real command lines (exit 2, one
stderr line, no traceback) in tests/integration/test_config_command_lines.py.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from annotated_types import Ge
from pydantic.fields import FieldInfo
from shellgate.common.config_schema import ConfigError, StrictModel, log_level, render_value
from shellgate.common.env_policy import Inherit
from shellgate.execserver import config as exec_config
from shellgate.router.decode.tools import ConfigShellToolType
from shellgate.router.service import config as router_config
from shellgate.router.service.wire import turn as wire_turn

Row = tuple[str, dict[str, Any], str, str]


def _key(name: str, info: FieldInfo) -> str:
    return info.alias or name


def _floor(info: FieldInfo) -> int | None:
    return next((int(m.ge) for m in info.metadata if isinstance(m, Ge)), None)  # type: ignore[arg-type]


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, StrictModel)


def _sample(info: FieldInfo) -> Any:
    """A valid value for a required key (strings double as host:port addresses)."""
    kind = info.annotation
    if kind is int:
        return max(1, _floor(info) or 0)
    if kind is bool:
        return False
    return "127.0.0.1:1"


def _minimal(model: type[StrictModel]) -> dict[str, Any]:
    return {_key(n, i): _sample(i) for n, i in model.model_fields.items() if i.is_required()}


def _wrong_values(info: FieldInfo) -> Iterator[tuple[str, Any, str, str]]:
    """(label, wrong value, key path suffix, the problem's start) for one leaf key."""
    kind = info.annotation
    origin = typing.get_origin(kind)
    if kind is int:
        yield "str", "ten", "", "must be an integer"
        yield "bool", True, "", "must be an integer"
        yield "float", 1.5, "", "must be an integer"
        floor = _floor(info)
        if floor is not None:
            yield "below", floor - 1, "", f"must be >= {floor}"
    elif kind is bool:
        yield "str", "yes", "", "must be true or false"
        yield "int", 1, "", "must be true or false"
    elif kind is str:
        yield "int", 5, "", "must be a string"
        yield "bool", True, "", "must be a string"
    elif origin is Literal:
        allowed = typing.get_args(kind)
        yield "int", 5, "", "not an allowed value"
        yield "bad", "sometimes", "", "not an allowed value"
        yield "case", str(allowed[0]).upper(), "", "not an allowed value"
    elif origin is list:
        yield "str", "x", "", "must be an array"
        if typing.get_args(kind)[0] is str:
            yield "item", [5], "[0]", "must be a string"
    elif origin is dict:
        yield "str", "x", "", "must be a table"
    else:
        raise AssertionError(f"no wrong values for {kind!r}: extend _wrong_values")


def rows_of(model: type[StrictModel], base: dict[str, Any], path: str) -> Iterator[Row]:
    """Every mistake row of a table: (id, data, expected key path, expected problem)."""
    prefix = f"{path}." if path else ""
    yield f"{prefix}unknown", {**base, "bogus_key": 1}, f"{prefix}bogus_key", "unknown key"
    for name, info in model.model_fields.items():
        key = _key(name, info)
        kind = info.annotation
        args = typing.get_args(kind)
        if _is_model(kind):
            yield f"{prefix}{key}=int", {**base, key: 5}, f"{prefix}{key}", "must be a table"
            for row_id, nested, where, problem in rows_of(kind, {}, f"{prefix}{key}"):
                yield row_id, {**base, key: nested}, where, problem
        elif typing.get_origin(kind) is list and _is_model(args[0]):
            entry = args[0]
            yield f"{prefix}{key}=table", {**base, key: {}}, f"{prefix}{key}", "must be an array"
            for row_id, item, where, problem in rows_of(entry, _minimal(entry), f"{prefix}{key}[0]"):
                yield row_id, {**base, key: [item]}, where, problem
            for required, field_info in entry.model_fields.items():
                if field_info.is_required():
                    item = _minimal(entry)
                    del item[_key(required, field_info)]
                    where = f"{prefix}{key}[0].{_key(required, field_info)}"
                    yield f"{where}-missing", {**base, key: [item]}, where, "required key is missing"
        else:
            for label, value, suffix, problem in _wrong_values(info):
                yield f"{prefix}{key}={label}", {**base, key: value}, f"{prefix}{key}{suffix}", problem
            if typing.get_origin(kind) is dict:
                where = f"{prefix}{key}.ci"
                yield f"{where}=int", {**base, key: {"ci": 5}}, where, "must be a"


Parser = Callable[[dict[str, Any]], object]
DAEMONS: dict[str, tuple[type[StrictModel], Parser]] = {
    "router": (router_config.ROUTER_TABLE, router_config.parse_config),
    "execserver": (exec_config.SERVER_TABLE, exec_config.parse_config),
}
ROWS = {
    daemon: [(f"{daemon}:{row_id}", data, where, problem) for row_id, data, where, problem in rows_of(table, {}, "")]
    for daemon, (table, _parse) in DAEMONS.items()
}


def _refusal(parse: Parser, data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(data)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("config error: "), message
    return message


@pytest.mark.parametrize("daemon", list(DAEMONS))
def test_every_mistake_is_one_line_naming_the_key(daemon: str) -> None:
    """One test per daemon over all its rows (hundreds): every wrong row is listed."""
    parse = DAEMONS[daemon][1]
    wrong = []
    for row_id, data, where, problem in ROWS[daemon]:
        try:
            parse(data)
        except ConfigError as exc:
            message = str(exc)
            if "\n" in message or not message.startswith(f"config error: {where}: {problem}"):
                wrong.append(f"{row_id}: {message}")
        else:
            wrong.append(f"{row_id}: accepted {data}")
    assert not wrong, "\n".join(wrong)


def test_the_table_covers_every_key_and_level() -> None:
    ids = {row[0] for rows in ROWS.values() for row in rows}
    assert len(ids) == sum(len(rows) for rows in ROWS.values()) > 400
    for expected in ("router:defaults.shell_environment_policy.unknown", "router:environments[0].unknown",
                     "router:discovery[0].port=below", "router:limits.max_threads=bool",
                     "execserver:ssh.unknown", "execserver:process.kill_grace_ms=str",
                     "execserver:backend=case", "execserver:connections.max_idle_ms=below"):
        assert expected in ids


@pytest.mark.parametrize(
    ("parse", "data", "expected"),
    [
        (router_config.parse_config, {"listen": 5}, "config error: listen: must be a string (got 5)"),
        (router_config.parse_config, {"limits": {"max_threads": "10"}},
         "config error: limits.max_threads: must be an integer (got '10')"),
        (router_config.parse_config, {"defaults": {"approval_policy": "sometimes"}},
         "config error: defaults.approval_policy: not an allowed value (got 'sometimes'; allowed: "
         "'never', 'on-failure', 'on-request', 'untrusted', 'granular')"),
        (router_config.parse_config, {"defaults": {"shell_environment_policy": {"exclud": ["AWS_*"]}}},
         "config error: defaults.shell_environment_policy.exclud: unknown key, did you mean exclude? "
         "(allowed: exclude, ignore_default_excludes, include_only, inherit, set)"),
        (router_config.parse_config, {"listen": "127.0.0.1:99999"},
         "config error: listen: must be host:port with a port 0-65535 (IPv6 as [addr]:port) "
         "(got '127.0.0.1:99999')"),
        (router_config.parse_config, {"listen": "localhost"}, "config error: listen: must be host:port"),
        (router_config.parse_config, {"metrics_listen": "::1:9464"}, "config error: metrics_listen: must be host:port"),
        (exec_config.parse_config, {"backend": "SSH"},
         "config error: backend: not an allowed value (got 'SSH'; allowed: 'local', 'ssh')"),
        (exec_config.parse_config, {"listen": 5}, "config error: listen: must be a string (got 5)"),
        (exec_config.parse_config, {"backend": "ssh"}, 'config error: ssh.host: required with backend = "ssh"'),
        (exec_config.parse_config, {"tls_cert_file": "/c.pem"},
         "config error: tls_key_file: tls_cert_file and tls_key_file must be set together"),
    ],
)
def test_the_reported_mistakes(parse: Parser, data: dict[str, Any], expected: str) -> None:
    assert _refusal(parse, data).startswith(expected)


def test_valid_values_still_load() -> None:
    config = router_config.parse_config(
        {"listen": "[::1]:0", "defaults": {"approval_policy": "never", "shell_environment_policy": {"inherit": "core"}},
         "environments": [{"id": "b", "target": "127.0.0.1:1"}], "client_environments": {"ci": ["b"]}}
    )
    assert config.listen == "[::1]:0" and config.environments[0].environment_id == "b"
    assert config.client_environments == (("ci", ("b",)),)
    assert exec_config.parse_config({"backend": "ssh", "ssh": {"host": "h"}}).ssh.host == "h"


def test_a_flag_mistake_names_the_flag() -> None:
    flags = {"listen": "--listen", "rules_dirs": "--rules-dir"}
    with pytest.raises(ConfigError, match=r"^config error: --listen: must be host:port .*got 'localhost'"):
        router_config.load_config(None, flags, listen="localhost")
    with pytest.raises(ConfigError, match=r"^config error: --listen: must be host:port"):
        exec_config.load_config(None, {"listen": "127.0.0.1:99999"}, {"listen": "--listen"})
    # The same key from a file is named as the key.
    with pytest.raises(ConfigError, match=r"^config error: listen: "):
        router_config.load_config(None, None, listen="localhost")
    with pytest.raises(ConfigError, match=r"^config error: --log-level: not a log level \(got 'loud'; allowed: DEBUG, INFO"):
        log_level("loud")
    assert log_level("debug") == 10


def test_secrets_are_never_echoed() -> None:
    for key, value in [("redis_url", "redis://:hunter2@h:1/0"), ("defaults.shell_environment_policy.set.KEY", "hunter2"),
                       ("listen", "redis://u:hunter2@h:1"), ("environments[0].target", "grpc://u:hunter2@h:1")]:
        assert "hunter2" not in render_value(key, value), key
    message = _refusal(router_config.parse_config, {"redis_url": ["redis://:hunter2@h:1/0"]})
    assert "hunter2" not in message
    message = _refusal(router_config.parse_config, {"listen": "redis://u:hunter2@h:1"})
    assert "hunter2" not in message and "<redacted>" in message
    message = _refusal(router_config.parse_config, {"defaults": {"shell_environment_policy": {"set": {"K": 7}}}})
    assert message.endswith("set.K: must be a string (got <redacted>)")


def test_enum_names_match_what_the_router_reads() -> None:
    assert typing.get_args(router_config.ApprovalPolicyName) == tuple(wire_turn._APPROVAL_MODES)
    assert typing.get_args(router_config.PermissionProfileName) == tuple(wire_turn._POLICY_PROFILES)
    assert typing.get_args(router_config.ShellToolTypeName) == tuple(t.value for t in ConfigShellToolType)
    assert typing.get_args(router_config.InheritName) == tuple(i.value for i in Inherit)


def test_rules_dirs_must_exist_and_an_empty_one_warns(tmp_path: Path) -> None:
    missing = router_config.parse_config({"rules_dirs": [str(tmp_path / "nope")]})
    with pytest.raises(ConfigError, match=r"^config error: rules_dirs\[0\]: no such directory"):
        router_config.check_rules_dirs(missing)
    with pytest.raises(ConfigError, match=r"^config error: --rules-dir: no such directory"):
        router_config.check_rules_dirs(missing, "--rules-dir")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a.rules").write_text("")
    (tmp_path / "empty").mkdir()
    config = router_config.parse_config({"rules_dirs": [str(tmp_path / "full"), str(tmp_path / "empty")]})
    warnings = router_config.check_rules_dirs(config)
    assert len(warnings) == 1 and warnings[0].startswith("rules_dirs[1]: ")


def test_an_unreadable_or_broken_file_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("listen = \n")
    for load in (router_config.load_config, exec_config.load_config):
        with pytest.raises(ConfigError, match=rf"^config error: {broken}: not valid TOML"):
            load(str(broken))
        with pytest.raises(ConfigError, match=r"^config error: .*missing.toml: cannot read the config file"):
            load(str(tmp_path / "missing.toml"))
