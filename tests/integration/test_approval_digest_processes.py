"""An approval key's digest is the same in other interpreter processes, whatever their hash
seed (moved from tests/unit/test_approval_identity.py: it starts processes)."""

from __future__ import annotations

import subprocess
import sys

from shellgate.router.approval_identity import shell_command_approval_key
from shellgate.router.decode.sandbox_permissions import SandboxPermissions

USE_DEFAULT = SandboxPermissions.USE_DEFAULT


def test_digest_is_stable_across_processes() -> None:
    code = (
        "from shellgate.router.approval_identity import shell_command_approval_key as k;"
        "from shellgate.router.decode.sandbox_permissions import SandboxPermissions as S;"
        "print(k(environment_id='local', argv=['/bin/bash','-lc','cargo test'],"
        " cwd='/work/ünï', sandbox_permissions=S.USE_DEFAULT,"
        " additional_permissions=None).digest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    key = shell_command_approval_key(
        environment_id="local",
        argv=["/bin/bash", "-lc", "cargo test"],
        cwd="/work/ünï",
        sandbox_permissions=USE_DEFAULT,
        additional_permissions=None,
    )
    assert digests == {key.digest()}
