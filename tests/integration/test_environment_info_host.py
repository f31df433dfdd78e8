"""This host's own GetInfo (the local daemon's answer: it probes the shell and runs bubblewrap
to see whether the sandbox works) round-trips byte for byte through `EnvironmentInfo` and
`ListEnvironments` (moved from tests/unit/test_environment_info.py: the probe starts processes)."""

from __future__ import annotations

from shellgate.execserver.config import ServerConfig
from shellgate.execserver.convert import host_info_pb
from shellgate.execserver.info import local_host_info
from shellgate.router.handler.shells import ShellType
from shellgate.router.runtime.environments.remote.info import (
    EnvironmentInfo,
    ExecBackend,
    info_from_pb,
)

from tests.unit.test_environment_info import _round_trip


def test_the_daemons_own_answer_round_trips(tmp_path: object) -> None:
    pb = host_info_pb(local_host_info(str(tmp_path)), ServerConfig(), "local")
    info = info_from_pb(pb)
    assert isinstance(info, EnvironmentInfo) and info.backend is ExecBackend.LOCAL
    assert info.limits is not None and info.limits.max_wait_ms == pb.limits.max_wait_ms
    if pb.HasField("shell"):
        assert info.shell is not None and info.shell.type in set(ShellType)
    back = _round_trip(pb)
    assert back == pb and back.SerializeToString() == pb.SerializeToString()
