"""Protobuf ↔ domain conversions for ExecService (the only module besides the servicer
that imports generated code)."""

from __future__ import annotations

from shellgate.common.egress.wire import narrowing_from_pb
from shellgate.common.enum_maps import INHERIT, SANDBOX_MODES, SHELL_TYPES, STREAMS
from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import InvalidArgumentError
from shellgate.common.process.base import ExitStatus
from shellgate.common.process.retention import SeqChunk
from shellgate.common.sandbox import SandboxSpec
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.files import FileStat
from shellgate.execserver.info import HostInfo
from shellgate.execserver.managed import ProcessState
from shellgate.execserver.start_spec import StartOrder
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2 as shell_pb

STATES = {
    ProcessState.RUNNING: pb.PROCESS_STATE_RUNNING,
    ProcessState.AWAITING_INPUT: pb.PROCESS_STATE_AWAITING_INPUT,
    ProcessState.EXITED: pb.PROCESS_STATE_EXITED,
    ProcessState.CLOSED: pb.PROCESS_STATE_CLOSED,
}
_FILE_KINDS = {
    "file": pb.FILE_KIND_FILE,
    "directory": pb.FILE_KIND_DIRECTORY,
    "symlink": pb.FILE_KIND_SYMLINK,
    "other": pb.FILE_KIND_OTHER,
}


def env_policy_from_pb(policy: shell_pb.ShellEnvironmentPolicy) -> ShellEnvironmentPolicy:
    """The domain policy from its wire form."""
    inherit = INHERIT.domain(policy.inherit)
    if inherit is None:
        raise InvalidArgumentError("env_policy.inherit is not a known value")
    return ShellEnvironmentPolicy.build(
        inherit=inherit,
        ignore_default_excludes=policy.ignore_default_excludes,
        exclude=list(policy.exclude),
        set_vars=dict(policy.set),
        include_only=list(policy.include_only),
    )


def sandbox_from_pb(request: shell_pb.SandboxRequest) -> SandboxSpec:
    """The domain sandbox spec from its wire form."""
    mode = SANDBOX_MODES.domain(request.mode)
    if mode is None:
        raise InvalidArgumentError("sandbox.mode is not a known value")
    narrowing = narrowing_from_pb(request.egress) if request.HasField("egress") else None
    return SandboxSpec(
        mode, tuple(request.writable_roots), request.network_access, egress_narrowing=narrowing
    )


def start_order_from_pb(request: pb.StartRequest) -> StartOrder:
    """The domain Start order from its wire form (enum values checked here)."""
    shell_type: str | None = None
    if request.shell_type != shell_pb.SHELL_TYPE_UNSPECIFIED:
        # An unknown number names no shell, so it can match no native shell.
        shell_type = SHELL_TYPES.domain(request.shell_type) or f"unknown({request.shell_type})"
    direct = request.shell_mode in (shell_pb.SHELL_MODE_UNSPECIFIED, shell_pb.SHELL_MODE_DIRECT)
    has = request.HasField
    return StartOrder(
        argv=tuple(request.argv),
        cwd=request.cwd,
        env=dict(request.env),
        env_policy=env_policy_from_pb(request.env_policy) if has("env_policy") else None,
        direct_mode=direct,
        shell_type=shell_type,
        tty=request.tty,
        rows=request.rows,
        cols=request.cols,
        stdin_open=request.stdin_open,
        arg0=request.arg0 if has("arg0") else None,
        sandbox=sandbox_from_pb(request.sandbox) if has("sandbox") else None,
        owner=request.owner,
        detach=request.detach,
        owner_ttl_ms=request.owner_ttl_ms if has("owner_ttl_ms") else None,
        timeout_ms=request.timeout_ms if has("timeout_ms") else None,
        request_id=request.request_id if has("request_id") else None,
        approved_cwd=(request.approved_cwd.device, request.approved_cwd.inode)
        if has("approved_cwd") else None,
    )


def exit_status_pb(status: ExitStatus, timed_out: bool) -> pb.ExitStatus:
    """Wire exit status (code or signal; a lost environment reports code -1)."""
    if status.signal is not None:
        return pb.ExitStatus(signal=status.signal, timed_out=timed_out)
    return pb.ExitStatus(code=status.code if status.code is not None else -1, timed_out=timed_out)


def fill_chunk_pb(target: pb.OutputChunk, chunk: SeqChunk) -> None:
    """Set a (sub)message's fields from a chunk, so the data is copied once, not per level."""
    target.seq = chunk.seq
    target.stream = STREAMS[chunk.stream]
    target.data = chunk.data
    target.end_offset = chunk.end


def host_info_pb(info: HostInfo, config: ServerConfig, caller: str) -> pb.GetInfoResponse:
    """GetInfo answer from host facts and configured limits."""
    reply = pb.GetInfoResponse(
        cwd=info.cwd,
        os=info.os,
        arch=info.arch,
        hostname=info.hostname,
        user=info.user,
        home=info.home,
        backend=pb.EXEC_BACKEND_SSH if info.backend == "ssh" else pb.EXEC_BACKEND_LOCAL,
        capabilities=pb.ExecCapabilities(
            pty=info.pty,
            signals=info.signals,
            sandbox=info.sandbox,
            sandbox_unavailable_reason=info.sandbox_unavailable_reason,
        ),
        version=info.version,
        limits=pb.ExecLimits(
            retained_output_bytes=config.retained_bytes,
            exited_retention_ms=config.exited_retention_ms,
            default_owner_ttl_ms=config.owner_ttl_ms,
            request_id_ttl_ms=config.idempotency_ttl_ms,
            max_processes=config.max_processes_per_caller,
            max_file_bytes=config.max_file_bytes,
            max_chunk_bytes=config.process.max_chunk_bytes,
            max_message_bytes=config.max_message_bytes,
            max_wait_ms=config.max_read_wait_ms,
        ),
        caller=caller,
    )
    if info.shell is not None:
        reply.shell.CopyFrom(
            shell_pb.ShellInfo(type=SHELL_TYPES[info.shell.name], path=info.shell.path)
        )
    return reply


def stat_pb(st: FileStat, *, with_identity: bool) -> pb.StatResponse:
    """Wire Stat answer; the identity only where processes start on this host."""
    if not st.exists:
        return pb.StatResponse(exists=False)
    reply = pb.StatResponse(
        exists=True,
        kind=_FILE_KINDS[st.kind],
        size=st.size,
        mode=st.mode,
        modified_ms=st.modified_ms,
    )
    if with_identity and st.identity is not None:
        reply.identity.CopyFrom(pb.CwdIdentity(device=st.identity[0], inode=st.identity[1]))
    return reply
