"""Router configuration: defaults, every section, and refusals with the key named."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from shellgate.router.service.config import ConfigError, RouterConfig, parse_config

FULL = """
listen = "127.0.0.1:50051"
token_file = "/etc/shellgate/tokens"
rules_dirs = ["/etc/shellgate/rules"]
redis_url = "redis://127.0.0.1:6379/0"
shared_state_key_file = "/etc/shellgate/seal.key"
metrics_listen = "127.0.0.1:9464"
health_listen = "0.0.0.0:50061"

[client_environments]
ci = ["local", "build1"]

[defaults]
approval_policy = "never"
truncation_tokens = 5000
[defaults.shell_environment_policy]
inherit = "core"
exclude = ["AWS_*"]
set = { CI = "1" }

[limits]
max_concurrent_executes = 8
sweep_interval_ms = 1000

[[environments]]
id = "build1"
target = "build1.example:50052"
tls_ca_file = "/etc/shellgate/ca.pem"

[[discovery]]
dns_name = "execserver.shellgate.svc"
port = 50052
id_prefix = "node"
"""


def test_no_file_means_loopback_with_one_local_environment() -> None:
    config = parse_config({})
    assert config == RouterConfig()
    assert config.listen == "127.0.0.1:50051" and config.local_environment
    assert config.health_listen == ""


def test_every_section_parses() -> None:
    config = parse_config(tomllib.loads(FULL))
    assert config.client_environments == (("ci", ("local", "build1")),)
    assert config.defaults.approval_policy == "never"
    assert config.defaults.env_inherit == "core"
    assert config.defaults.env_set == (("CI", "1"),)
    assert config.limits.max_concurrent_executes == 8
    assert config.environments[0].environment_id == "build1"
    assert config.environments[0].dial.insecure is False
    assert config.discovery[0].dns_name == "execserver.shellgate.svc"
    assert config.redis_url.startswith("redis://")
    # A non-loopback health port needs neither TLS nor insecure: it serves only health.
    assert config.health_listen == "0.0.0.0:50061" and not config.insecure and not config.tls


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bogus": 1}, "^config error: bogus: unknown key"),
        ({"limits": {"nope": 1}}, "^config error: limits.nope: unknown key"),
        ({"listen": "0.0.0.0:1"}, "^config error: listen: address is not loopback"),
        ({"tls_cert_file": "a.pem"}, "tls_key_file: .*must be set together"),
        ({"local_environment": False}, "local_environment: no environments"),
        ({"redis_url": "redis://a:6379/0", "redis_url_file": "/f"}, "redis_url_file: .*exclusive"),
        ({"health_listen": "50061"}, "^config error: health_listen: must be host:port"),
        ({"health_listen": "127.0.0.1:50051"}, "health_listen: .*main listener"),
        ({"environments": [{"id": "local", "target": "x:1"}]}, "environments: duplicate environment ids"),
    ],
)
def test_bad_configs_are_refused_with_the_key_named(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_a_discovery_only_router_is_a_valid_config() -> None:
    """The Kubernetes layout: no local environment, daemons found through DNS."""
    config = parse_config(
        {"local_environment": False, "discovery": [{"dns_name": "d.svc", "port": 1, "id_prefix": "n"}]}
    )
    assert config.environments == () and config.discovery[0].id_prefix == "n"


KEY = {"shared_state_key_file": "/etc/shellgate/seal.key"}


def test_redis_url_file_holds_the_url_and_is_masked(tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    url_file.write_text("redis://:pw@redis.example:6379/0\n")
    config = parse_config({"redis_url_file": str(url_file), **KEY})
    assert config.shared_store_url() == "redis://:pw@redis.example:6379/0"
    assert str(url_file) in config.secret_files()
    assert KEY["shared_state_key_file"] in config.secret_files()
    assert parse_config({"redis_url": "redis://x:1/0", **KEY}).shared_store_url() == "redis://x:1/0"
    assert parse_config({}).shared_store_url() == ""


@pytest.mark.parametrize("store", [{"redis_url": "redis://x:1/0"}, {"redis_url_file": "/f"}])
def test_a_shared_store_needs_the_seal_key(store: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="shared_state_key_file: required with a shared store"):
        parse_config(store)


@pytest.mark.parametrize(
    ("content", "mode", "problem"),
    [(None, 0o600, "cannot read"), ("short\n", 0o600, "needs at least 16 bytes"),
     ("k" * 32, 0o644, "readable by every user")],
)  # fmt: skip
def test_a_bad_seal_key_file_is_refused(
    tmp_path: Path, content: str | None, mode: int, problem: str
) -> None:
    from shellgate.router.runtime.store.record_seal import load_seal_key

    path = tmp_path / "seal.key"
    if content is not None:
        path.write_text(content)
        path.chmod(mode)
    with pytest.raises(ConfigError, match=f"shared_state_key_file: {problem}"):
        load_seal_key(str(path))


@pytest.mark.parametrize("content", [None, "  \n"])
def test_an_unreadable_or_empty_redis_url_file_is_refused(tmp_path: Path, content: str | None) -> None:
    url_file = tmp_path / "url"
    if content is not None:
        url_file.write_text(content)
    config = parse_config({"redis_url_file": str(url_file), **KEY})
    with pytest.raises(ConfigError, match="redis_url_file"):
        config.shared_store_url()


@pytest.mark.parametrize("key", ["max_threads", "max_unified_sessions_per_thread", "max_pending_approvals"])
def test_a_limit_without_room_is_refused(key: str) -> None:
    with pytest.raises(ConfigError, match=f"limits.{key}: must be >= 1 \\(got 0\\)"):
        parse_config({"limits": {key: 0}})
    assert parse_config({"limits": {"max_concurrent_executes_per_subject": 0}})


def test_observability_keys_are_checked() -> None:
    config = parse_config(
        {"audit_log": "/var/log/a.log", "audit_fsync": "always", "call_log_level": "debug"}
    )
    assert (config.audit_log, config.audit_fsync, config.call_log_level) == (
        "/var/log/a.log", "always", "debug",
    )  # fmt: skip
    for key, bad in (("audit_fsync", "sometimes"), ("call_log_level", "loud")):
        with pytest.raises(ConfigError, match=key):
            parse_config({key: bad})


def test_audit_keys_are_checked() -> None:
    config = parse_config({
        "audit_log": "/l/a.log", "audit_key_file": "/k/a.key", "audit_checkpoint_file": "/c/a",
        "audit_checkpoint_records": 10, "audit_checkpoint_interval_ms": 500,
    })  # fmt: skip
    assert (config.audit_key_file, config.audit_checkpoint_file) == ("/k/a.key", "/c/a")
    assert (config.audit_checkpoint_records, config.audit_checkpoint_interval_ms) == (10, 500)
    for key in ("audit_key_file", "audit_checkpoint_file"):
        with pytest.raises(ConfigError, match=f"{key}: needs audit_log"):
            parse_config({key: "/k/x"})
    for key in ("audit_checkpoint_records", "audit_checkpoint_interval_ms"):
        with pytest.raises(ConfigError, match=key):
            parse_config({"audit_log": "/l/a.log", key: 0})


def test_every_credential_and_masked_path_is_masked() -> None:
    # Each file a router holds a secret in, and masked_paths, is hidden from its sandboxes.
    config = parse_config(
        {
            "token_file": "/s/tokens", "tls_cert_file": "/s/cert", "tls_key_file": "/s/key",
            "redis_url_file": "/s/redis", **KEY, "metrics_token_file": "/s/mtok",
            "metrics_tls_cert_file": "/s/mcert", "metrics_tls_key_file": "/s/mkey",
            "console_listen": "127.0.0.1:1", "console_tls_cert_file": "/s/ccert",
            "console_tls_key_file": "/s/ckey", "redact_values_files": ["/s/values"],
            "audit_log": "/s/audit", "audit_keep": 2, "masked_paths": ["/s/extra", "/s/folder"],
            "audit_key_file": "/s/akey", "audit_checkpoint_file": "/s/acheck",
            "approvals": {"webhook": {"url": "https://h.example/x", "secret_file": "/s/hook"}},
            "environments": [{"id": "b", "target": "h:1", "token_file": "/s/etok",
                              "tls_key_file": "/s/ekey"}],
            "discovery": [{"dns_name": "d.svc", "port": 1, "id_prefix": "n",
                           "token_file": "/s/dtok", "tls_key_file": "/s/dkey"}],
        }
    )  # fmt: skip
    assert set(config.secret_files()) == {
        "/s/tokens", "/s/key", "/s/redis", KEY["shared_state_key_file"], "/s/mtok", "/s/mkey",
        "/s/ckey", "/s/values", "/s/audit", "/s/audit.1", "/s/audit.2", "/s/akey", "/s/acheck",
        "/s/extra",
        "/s/folder", "/s/hook", "/s/etok", "/s/ekey", "/s/dtok", "/s/dkey",
    }  # fmt: skip
