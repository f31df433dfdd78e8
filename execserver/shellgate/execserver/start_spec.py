"""A Start order → the spawn the daemon will make (checks, Direct mode, env, sandbox wrapping).

Protocol-neutral: the gRPC servicer converts `StartRequest` to a `StartOrder` and hands it
here, so any other front (e.g. a JSON-RPC one) gets exactly the same checks and refusals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shellgate.common.env_policy import ShellEnvironmentPolicy, exec_server_child_env
from shellgate.common.errors import ShellMismatchError, SpawnError, UnsupportedShellModeError
from shellgate.common.process.base import SpawnRequest
from shellgate.common.sandbox import SandboxMode, SandboxSpec, wrap_argv
from shellgate.common.sandbox_masks import user_named
from shellgate.execserver import validate
from shellgate.execserver.config import ServerConfig
from shellgate.execserver.egress import govern
from shellgate.execserver.info import HostInfo
from shellgate.execserver.process_table import StartSpec


@dataclass(frozen=True)
class StartOrder:
    """What a caller asked to start, in domain terms (unvalidated)."""

    argv: tuple[str, ...]
    cwd: str = ""
    env: Mapping[str, str] | None = None
    env_policy: ShellEnvironmentPolicy | None = None
    # Only Direct mode exists on a daemon; any other requested mode is refused.
    direct_mode: bool = True
    # The shell type the caller expects the daemon's native shell to be; None = any.
    shell_type: str | None = None
    tty: bool = False
    rows: int = 0
    cols: int = 0
    stdin_open: bool = False
    arg0: str | None = None
    sandbox: SandboxSpec | None = None
    owner: str = ""
    detach: bool = False
    owner_ttl_ms: int | None = None
    timeout_ms: int | None = None
    request_id: str | None = None
    # (st_dev, st_ino) of the directory an approval was asked for (common/process/cwd_pin).
    approved_cwd: tuple[int, int] | None = None


def build_start_spec(
    order: StartOrder,
    caller: str,
    *,
    host: HostInfo,
    config: ServerConfig,
    daemon_env: Mapping[str, str],
) -> StartSpec:
    """Check every field against its limit and build the spawn (FAILED_PRECONDITION refusals)."""
    validate.check_owner(order.owner, config)
    validate.check_argv(list(order.argv), config)
    env_overlay = dict(order.env or {})
    validate.check_env(env_overlay, config, "env")
    if not order.direct_mode:
        raise UnsupportedShellModeError("exec-server runs argv directly (direct mode only)")
    native = host.shell
    if order.shell_type is not None and (native is None or native.name != order.shell_type):
        raise ShellMismatchError(
            f"requested shell differs from the native shell {native.name if native else 'none'}"
        )
    validate.check_size(order.rows, order.cols, config, allow_zero=True)
    cwd = validate.resolve_cwd(order.cwd, host.cwd)
    if order.approved_cwd is not None and host.backend != "local":
        # Fail closed: an SSH backend cannot open the directory the approval was asked for.
        raise SpawnError(
            "this daemon's backend cannot check the approved working directory "
            f"({host.backend}); nothing ran",
            0,
        )
    env = exec_server_child_env(daemon_env, order.env_policy, env_overlay)
    argv = order.argv
    sandboxed = False
    if order.sandbox is not None:
        # `[network]` on: a command with network reaches only what this daemon's policy allows.
        sandbox = govern(order.sandbox, config.network, caller, order.owner)
        # The host that runs the process decides (the SSH backend probed its remote).
        argv, extra = wrap_argv(
            argv, cwd, sandbox,
            bwrap=host.bwrap_path or None,
            unavailable_reason=host.sandbox_unavailable_reason if not host.sandbox else "",
            masked_paths=config.secret_files() if host.backend == "local" else (),
            runs_here=host.backend == "local",
            tty=order.tty,
            # Under run_as bubblewrap runs as that user: masks go only where it can reach.
            user=user_named(config.run_as) if config.run_as else None,
            cwd_identity=order.approved_cwd,
        )  # fmt: skip
        env.update(extra)
        sandboxed = order.sandbox.mode is not SandboxMode.NONE
    spawn = SpawnRequest(
        argv=argv,
        cwd=cwd,
        env=env,
        tty=order.tty,
        rows=order.rows or 24,
        cols=order.cols or 80,
        stdin_open=order.stdin_open,
        # bubblewrap execs the program itself, so a custom arg0 cannot survive the wrapper.
        arg0=order.arg0 if not sandboxed else None,
        # The backend opens cwd once and starts the child in it, or fails (cwd_pin).
        cwd_identity=order.approved_cwd,
    )
    return StartSpec(
        caller=caller,
        owner=order.owner,
        spawn=spawn,
        detach=order.detach,
        owner_ttl_ms=order.owner_ttl_ms,
        timeout_ms=order.timeout_ms,
        request_id=order.request_id,
        sandboxed=sandboxed,
    )
