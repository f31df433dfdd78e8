"""A real OpenSSH sshd on 127.0.0.1 with generated host/user keys (STYLE.md recipe)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from shellgate.execserver.config import ProcessLimits, SshConfig

from tests.waiting import eventually

SSHD = "/usr/sbin/sshd"
# The dedicated login scripts/setup-test.sh creates (root only): an unprivileged user whose
# shell profile is empty, so the invoking user's ~/.bashrc (which Debian's bash sources for
# ssh commands; e.g. `pyenv init -` waiting on a stale lock) never runs in a test.
TEST_USER = "shellgate-ssh"


def login_user() -> str:
    """The user SSH tests log in as: TEST_USER when it exists and sshd can switch to it."""
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(TEST_USER)
        except KeyError:
            pass
        else:
            if entry.pw_shell and os.path.exists(entry.pw_shell):
                return TEST_USER
    return os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name


@dataclass(frozen=True)
class Sshd:
    """A running sshd and the client-side material to reach it."""

    port: int
    user: str
    key_file: str
    known_hosts_file: str
    pid: int

    def config(self, **overrides: object) -> SshConfig:
        """An SshConfig for this server with short timeouts."""
        base = dict(host="127.0.0.1", port=self.port, user=self.user, key_file=self.key_file,
                    known_hosts_file=self.known_hosts_file, connect_timeout_ms=5_000,
                    keepalive_interval_ms=2_000, keepalive_count_max=2)
        base.update(overrides)
        return SshConfig(**base)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@pytest.fixture(scope="session")
def sshd_server() -> Iterator[Sshd]:
    """Start sshd once per session; skip with a reason when it cannot run here."""
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH server not installed (scripts/setup-test.sh installs it)")
    root = Path(tempfile.mkdtemp(prefix="sg-sshd-"))
    _keygen(root / "host_key")
    _keygen(root / "user_key")
    shutil.copy(root / "user_key.pub", root / "authorized_keys")
    user = login_user()
    # sshd reads AuthorizedKeysFile with the target user's privileges: another user needs
    # to reach it (only public material; the host and client private keys stay 0600).
    root.chmod(0o755)
    (root / "authorized_keys").chmod(0o644)
    port = _free_port()
    cfg = root / "sshd_config"
    cfg.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {root / 'host_key'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PermitRootLogin prohibit-password\nPidFile {root / 'sshd.pid'}\n"
        "LogLevel ERROR\nMaxSessions 64\nMaxStartups 64\n"
    )
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", exist_ok=True)
    check = subprocess.run([SSHD, "-t", "-f", str(cfg)], capture_output=True, check=False)
    if check.returncode != 0:
        pytest.skip(f"sshd -t failed: {check.stderr.decode()[:300]}")
    host_pub = (root / "host_key.pub").read_text().split()
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    # sshd must not carry a test's orphan marker: it outlives every single test.
    env = {k: v for k, v in os.environ.items() if k != "SHELLGATE_TEST_MARK"}
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    # As before: after 10 s the tests go on and meet whatever sshd does.
    with contextlib.suppress(AssertionError):
        eventually(listening, "sshd listening", 10)
    try:
        yield Sshd(port, user, str(root / "user_key"), str(root / "known_hosts"), proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def ssh_backend_factory(
    request: pytest.FixtureRequest, limits: ProcessLimits
) -> Callable[[], Awaitable[object]]:
    """A factory of SshBackend against the session sshd (skips when unavailable)."""
    server: Sshd = request.getfixturevalue("sshd_server")
    from shellgate.execserver.backends.ssh import SshBackend

    async def make() -> object:
        return SshBackend(server.config(), limits)

    return make
