"""deploy/examples: every example config loads through the daemon's own config module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
# Files the router writes (state, not configuration): under its StateDirectory.
WRITTEN_FILES = {"audit_checkpoint_file"}


def test_execserver_example_loads() -> None:
    config = pytest.importorskip(
        "shellgate.execserver.config", reason="shellgate.execserver.config is absent"
    )
    loaded: Any = config.load_config(str(EXAMPLES / "execserver.toml"))
    assert loaded.listen == "0.0.0.0:50052"
    # A non-loopback example must not be a plaintext one.
    assert loaded.tls_cert_file and loaded.tls_key_file and not loaded.insecure


def test_router_example_loads() -> None:
    config = pytest.importorskip(
        "shellgate.router.service.config", reason="shellgate.router.service.config has not landed yet"
    )
    loaded: Any = config.load_config(str(EXAMPLES / "router.toml"))
    assert loaded.listen == "0.0.0.0:50051"
    assert loaded.tls and not loaded.insecure
    assert loaded.rules_dirs[0] == "/var/lib/shellgate/rules"
    # The example signs its audit log (and is what INSTALL.md step 3 creates the key for).
    assert loaded.audit_log and loaded.audit_key_file == "/etc/shellgate/audit.key"
    install = (REPO / "deploy" / "systemd" / "INSTALL.md").read_text()
    assert f"-out {loaded.audit_key_file}" in install
    for env in loaded.environments:
        # Remote environments default to plaintext; the example must opt into TLS.
        assert not env.dial.insecure and env.dial.tls_ca_file, env.environment_id


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.toml")) == ["execserver.toml", "router.toml"]


def test_examples_name_files_under_etc_shellgate() -> None:
    import tomllib

    for path in EXAMPLES.glob("*.toml"):
        data = tomllib.loads(path.read_text())
        stack: list[Any] = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for key, value in item.items():
                    if key in WRITTEN_FILES and value:
                        assert value.startswith("/var/lib/shellgate/"), (path.name, key, value)
                    elif key.endswith("_file") and value:
                        assert value.startswith("/etc/shellgate/"), (path.name, key, value)
                    stack.append(value)
            elif isinstance(item, list):
                stack.extend(item)
