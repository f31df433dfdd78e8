"""deploy/systemd: the units verify, run as a dedicated user, restart on failure, stay hardened."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNITS = sorted((REPO / "deploy" / "systemd").glob("*.service"))
INSTALL_PREFIX = "/opt/shellgate/bin/"
# Options that would break PTYs or bubblewrap (see the unit headers); never set them.
FORBIDDEN = {
    "PrivateUsers": "yes",
    "ProcSubset": "pid",
    "MemoryDenyWriteExecute": "yes",
    "PrivateNetwork": "yes",
    "RestrictNamespaces": "yes",
}
REQUIRED = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    # Exactly what run_as needs (switch to the command user, signal its groups).
    "CapabilityBoundingSet": "CAP_SETUID CAP_SETGID CAP_KILL",
    "AmbientCapabilities": "CAP_SETUID CAP_SETGID CAP_KILL",
    "Restart": "on-failure",
    "User": "shellgate",
}


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections → key → values (repeatable keys keep every value), comments dropped."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            assert line.endswith("]"), line
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{path.name}: key outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not key=value: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_structure(unit: Path) -> None:
    sections = parse_unit(unit)
    assert set(sections) == {"Unit", "Service", "Install"}
    service = sections["Service"]
    for key, value in REQUIRED.items():
        assert service.get(key) == [value], key
    for key, value in FORBIDDEN.items():
        assert service.get(key, [""])[-1] != value, key
    assert service["RestrictNamespaces"] == ["user mnt net"]
    assert "AF_NETLINK" in service["RestrictAddressFamilies"][0]
    assert service["KillMode"] == ["mixed"]
    assert sections["Install"]["WantedBy"] == ["multi-user.target"]
    # StartLimit* are [Unit] keys; in [Service] systemd ignores them with a warning.
    assert "StartLimitBurst" in sections["Unit"]
    exec_start = service["ExecStart"][0]
    assert exec_start.startswith(INSTALL_PREFIX)
    assert "--config /etc/shellgate/" in exec_start
    # Each option left out is explained in the header.
    text = unit.read_text()
    for key in ("PrivateUsers", "ProcSubset", "MemoryDenyWriteExecute"):
        assert re.search(rf"^#.*\b{key}\b", text, re.M), key


def test_each_unit_runs_its_daemon() -> None:
    starts = {u.name: parse_unit(u)["Service"]["ExecStart"][0] for u in UNITS}
    assert starts["shellgate-router.service"].split()[:2] == [INSTALL_PREFIX + "shellgate", "serve"]
    assert starts["shellgate-execserver.service"].split()[:2] == [
        INSTALL_PREFIX + "shellgate-execserver", "serve",
    ]


def _installed_copies(tmp_path: Path) -> list[Path]:
    """The units with ExecStart pointing at this checkout's console scripts."""
    script = shutil.which("shellgate")
    if script is None:
        pytest.skip("the shellgate console script is not on PATH")
    copies = []
    for unit in UNITS:
        copy = tmp_path / unit.name
        copy.write_text(unit.read_text().replace(INSTALL_PREFIX, str(Path(script).parent) + "/"))
        copies.append(copy)
    return copies


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (test_structure covers the units)")
    result = subprocess.run(
        [tool, "verify", *map(str, _installed_copies(tmp_path))],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Unknown" not in result.stderr and "ignoring" not in result.stderr, result.stderr


def test_systemd_analyze_security_rates_the_units_ok(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    for copy in _installed_copies(tmp_path):
        result = subprocess.run(
            [tool, "security", "--offline=yes", "--no-pager", str(copy)],
            capture_output=True, text=True, timeout=60, check=False,
        )
        if "--offline" in result.stderr or "unrecognized option" in result.stderr:
            pytest.skip("systemd-analyze security has no --offline mode here (systemd < 252)")
        match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
        assert match, result.stdout[-2000:] + result.stderr
        # 0 = fully locked down, 10 = unprotected; "OK" is below 4 in systemd's scale.
        assert float(match.group(1)) < 4.0, (copy.name, match.group(1))
