"""A daemon's GetInfo, read into `EnvironmentInfo` at the remote edge and written back by
`ListEnvironments`, arrives byte for byte as the daemon sent it (this host's own answer,
which probes bubblewrap: tests/integration/test_environment_info_host.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.runtime.environments.registry import EnvironmentStatus
from shellgate.router.runtime.environments.remote.info import (
    info_from_pb,
)
from shellgate.router.service.wire.events import status_pb
from shellgate.v1 import exec_pb2, shell_pb2


def _round_trip(pb: exec_pb2.GetInfoResponse) -> exec_pb2.GetInfoResponse:
    status = EnvironmentStatus("box", True, "127.0.0.1:1", True, "", info_from_pb(pb))
    wire = status_pb(status)
    assert wire.HasField("info")
    return wire.info


def test_no_info_stays_absent() -> None:
    status = EnvironmentStatus("local", False, "", True, "", None)
    assert not status_pb(status).HasField("info")


def test_unknown_enum_numbers_read_as_not_reported() -> None:
    pb = exec_pb2.GetInfoResponse(backend=77)  # type: ignore[arg-type]
    pb.shell.type = 99  # type: ignore[assignment]
    pb.shell.path = "/bin/odd"
    info = info_from_pb(pb)
    assert info.backend is None and info.shell is not None and info.shell.type is None
    assert info.capabilities is None and info.limits is None


_known_shells = st.sampled_from(
    [shell_pb2.SHELL_TYPE_UNSPECIFIED, shell_pb2.SHELL_TYPE_BASH, shell_pb2.SHELL_TYPE_ZSH,
     shell_pb2.SHELL_TYPE_SH, shell_pb2.SHELL_TYPE_POWERSHELL, shell_pb2.SHELL_TYPE_CMD]
)  # fmt: skip
_u32, _u64 = st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)


@st.composite
def _answers(draw: st.DrawFn) -> exec_pb2.GetInfoResponse:
    pb = exec_pb2.GetInfoResponse(
        cwd=draw(st.text(max_size=8)), os=draw(st.text(max_size=5)),
        arch=draw(st.text(max_size=5)), hostname=draw(st.text(max_size=5)),
        user=draw(st.text(max_size=5)), home=draw(st.text(max_size=5)),
        version=draw(st.text(max_size=5)), caller=draw(st.text(max_size=5)),
        backend=draw(st.sampled_from([0, exec_pb2.EXEC_BACKEND_LOCAL, exec_pb2.EXEC_BACKEND_SSH])),
    )  # fmt: skip
    if draw(st.booleans()):
        pb.shell.SetInParent()
        pb.shell.type = draw(_known_shells)
        pb.shell.path = draw(st.text(max_size=8))
    if draw(st.booleans()):
        caps = pb.capabilities
        caps.SetInParent()
        caps.pty, caps.signals, caps.sandbox = draw(st.tuples(*[st.booleans()] * 3))
        caps.sandbox_unavailable_reason = draw(st.text(max_size=8))
    if draw(st.booleans()):
        limits = pb.limits
        limits.SetInParent()
        for name in limits.DESCRIPTOR.fields_by_name:
            setattr(limits, name, draw(_u32 if name == "max_processes" else _u64))
    return pb


@settings(max_examples=200, deadline=None)
@given(_answers())
def test_any_answer_round_trips_byte_for_byte(pb: exec_pb2.GetInfoResponse) -> None:
    back = _round_trip(pb)
    assert back == pb
    assert back.SerializeToString(deterministic=True) == pb.SerializeToString(deterministic=True)
