"""Bubblewrap sandbox on the daemon's host: read-only / workspace-write, network off or on."""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from shellgate.common.egress.bridge import bridge_argv, proxy_env
from shellgate.common.egress.policy import EgressNarrowing
from shellgate.common.errors import SandboxUnavailableError
from shellgate.common.process.cwd_pin import CwdIdentity, sandbox_cwd_check_argv
from shellgate.common.protected_names import POINTER_MAX_CHARS, gitdir_target
from shellgate.common.protected_names import PROTECTED_NAMES as PROTECTED_NAMES  # re-exported
from shellgate.common.sandbox_masks import User, mask_args, service_dirs
from shellgate.common.seccomp import seccomp_filter_path

NETWORK_DISABLED_ENV = "CODEX_SANDBOX_NETWORK_DISABLED"
# Case-insensitive substrings that make a failed sandboxed run a denial (spec 05 §1.3).
DENIAL_MARKERS = (
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
    "failed to write file",
)
_SIGSYS = 31
# Opens the seccomp filter on fd 3 and execs the rest of argv (bubblewrap reads fd 3).
SECCOMP_TRAMPOLINE = ("/bin/sh", "-c", 'exec 3<"$0" && exec "$@"')


def launch_prefix(argv: tuple[str, ...]) -> int:
    """How many leading argv words open the seccomp filter (0 when none): a user switch
    must come after them, since only the service's own uid can open the filter."""
    n = len(SECCOMP_TRAMPOLINE)
    return n + 1 if argv[:n] == SECCOMP_TRAMPOLINE and len(argv) > n else 0


class SandboxMode(enum.Enum):
    """Filesystem restriction requested for a process."""

    NONE = "none"
    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"


@dataclass(frozen=True)
class SandboxSpec:
    """A sandbox to apply: mode, writable roots (workspace-write only), network."""

    mode: SandboxMode = SandboxMode.NONE
    writable_roots: tuple[str, ...] = ()
    network_access: bool = False
    # The network governed (docs/sandbox.md "Egress"): the environment's egress proxy socket
    # and this command's route there; set by the environment at the spawn, never by callers.
    egress_socket: str = ""
    egress_route: str = ""
    # How the turn narrows the environment's egress policy (PermissionProfile.egress).
    egress_narrowing: EgressNarrowing | None = None

    @property
    def proxied(self) -> bool:
        """Whether the command's network goes through the egress proxy only."""
        return self.network_access and bool(self.egress_socket)


# Process isolation Codex's bwrap argv also has: a new session (no controlling terminal to
# inject into), its own PID namespace (the host's processes are invisible and unsignalable,
# and everything in it dies with the command), its own IPC namespace, no capabilities.
_ISOLATION = (
    "--new-session", "--die-with-parent", "--unshare-pid", "--unshare-ipc",
    "--cap-drop", "ALL",
)  # fmt: skip


def _runs(argv: list[str]) -> str | None:
    """None when the probe exits 0; otherwise why not."""
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed: {exc}"
    if probe.returncode != 0:
        return "bwrap failed: " + probe.stderr.decode(errors="replace").strip()[:200]
    return None


@lru_cache(maxsize=1)
def _local_probe() -> tuple[str, bool]:
    """(why bubblewrap cannot sandbox here, or ""; whether it can mount a new /proc)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap not found", False
    base = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", *_ISOLATION, "--unshare-net"]
    failure = _runs([*base, "--proc", "/proc", "true"])
    if failure is None:
        return "", True
    # Some container runtimes refuse a new procfs in a PID namespace (a masked /proc). As
    # Codex does, run without mounting one: the PID namespace still keeps the host's
    # processes unsignalable, they are only listed in the bound /proc.
    if _runs([*base, "true"]) is None:
        return "", False
    return failure, False


def sandbox_unavailable_reason() -> str:
    """Empty when bubblewrap works here with every flag the sandbox uses; otherwise why not."""
    return _local_probe()[0]


def local_sandbox_summary() -> str:
    """One phrase for start-up banners: the bubblewrap in use here, or why there is none."""
    reason = sandbox_unavailable_reason()
    if reason:
        return f"none ({reason}; sandboxed commands are refused: {sandbox_remedy(reason)})"
    return f"bubblewrap ({shutil.which('bwrap')})"


def sandbox_remedy(reason: str) -> str:
    """What an operator does about `reason` (a `sandbox_unavailable_reason()` text)."""
    if reason == "bwrap not found":
        return "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap)"
    # Found but failing: almost always user namespaces switched off (containers, Ubuntu 24.04's
    # AppArmor restriction) — deploy/systemd/INSTALL.md has the details.
    return (
        "let bubblewrap create user namespaces (sysctl user.max_user_namespaces > 0; Debian: "
        "kernel.unprivileged_userns_clone=1; Ubuntu >= 23.10: "
        "kernel.apparmor_restrict_unprivileged_userns=0)"
    )


def _protected_binds(root: str) -> list[str]:
    """Read-only re-binds of the protected names that exist under a writable root.

    A `.git` file (a worktree's pointer) also protects the directory it points to.
    """
    args: list[str] = []
    for name in PROTECTED_NAMES:
        path = os.path.join(root, name)
        if not os.path.lexists(path):
            continue
        args += ["--ro-bind", path, path]
        if name == ".git" and os.path.isfile(path):
            target = _gitdir_target(path)
            if target is not None:
                args += ["--ro-bind-try", target, target]
    return args


def _gitdir_target(pointer: str) -> str | None:
    try:
        with open(pointer, encoding="utf-8", errors="replace") as f:
            text = f.read(POINTER_MAX_CHARS)
    except OSError:
        return None
    return gitdir_target(pointer, text)


def bwrap_argv(
    bwrap: str,
    argv: tuple[str, ...],
    cwd: str,
    spec: SandboxSpec,
    *,
    masked_paths: tuple[str, ...] = (),
    seccomp_path: str | None = None,
    new_session: bool = True,
    mount_proc: bool = True,
    user: User | None = None,
    cwd_identity: CwdIdentity | None = None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The bubblewrap launch argv (for whichever host runs it) and the env additions.

    With `cwd_identity` (an approved directory) the command runs behind
    `cwd_pin.sandbox_cwd_check_argv`: `--chdir` takes a path, so the sandboxed side checks
    that `.` is still the approved directory before it execs the command.

    `masked_paths` (the service's own credentials: token files, TLS keys, its config, their
    folders) read as empty inside the sandbox (`sandbox_masks`; `user` runs bubblewrap, when
    not this process's user: `run_as`). `seccomp_path` names this host's seccomp filter for
    the spec's network setting (`seccomp`), applied when given. With the network off the
    command gets its own network namespace (loopback only) and CODEX_SANDBOX_NETWORK_DISABLED;
    with it on it shares the host's network, as under Codex 0.169; with it governed
    (`spec.proxied`) it keeps the empty namespace and reaches only the egress proxy, through
    `egress/bridge`, which loads the proxied seccomp filter itself before the command runs.
    """
    if cwd_identity is not None:
        argv = sandbox_cwd_check_argv(cwd_identity, argv)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev"]
    if spec.mode is SandboxMode.WORKSPACE_WRITE:
        for root in spec.writable_roots:
            if not os.path.isabs(root):
                raise SandboxUnavailableError(f"writable root must be absolute: {root}")
            # --bind-try: a root missing on the host that runs it is skipped, not an error
            # (the check happens there, not on the daemon's filesystem).
            args += ["--bind-try", root, root]
        for root in spec.writable_roots:
            args += _protected_binds(root)
    # After every bind: a credential inside a writable root stays masked.
    roots = spec.writable_roots if spec.mode is SandboxMode.WORKSPACE_WRITE else ()
    keep: tuple[str, ...] = ()
    if spec.proxied:
        if user is not None:
            # The proxy's folder is the service user's alone (0700): refuse, never bypass.
            raise SandboxUnavailableError("egress control does not support run_as yet")
        # The proxy's folder, under the masked runtime dir, bound back read-only: the
        # command can neither remove nor replace the socket its bridge reaches.
        keep = (os.path.realpath(os.path.dirname(spec.egress_socket)),)
    args += mask_args(masked_paths, cwd, roots, user, keep)
    isolation = _ISOLATION if new_session else _ISOLATION[1:]
    args += [*isolation, *(("--proc", "/proc") if mount_proc else ())]
    extra: dict[str, str] = {}
    prefix: tuple[str, ...] = ()
    if not spec.network_access:
        args.append("--unshare-net")
        extra[NETWORK_DISABLED_ENV] = "1"
    if spec.proxied:
        if seccomp_path is None:
            # The bridge loads the filter from fd 3: without it nothing would stop the
            # command from reaching the proxy socket's neighbours.
            raise SandboxUnavailableError("egress control needs this host's seccomp filter")
        args.append("--unshare-net")
        extra.update(proxy_env())
        argv = bridge_argv(spec.egress_socket, spec.egress_route, argv)
        prefix = (*SECCOMP_TRAMPOLINE, seccomp_path)
    elif seccomp_path is not None:
        # bwrap reads the filter from an fd; a POSIX sh opens it (fd 3) and execs bwrap.
        prefix = (*SECCOMP_TRAMPOLINE, seccomp_path)
        args += ["--seccomp", "3"]
    args += ["--chdir", cwd, "--", *argv]
    return (*prefix, *args), extra


def wrap_argv(
    argv: tuple[str, ...],
    cwd: str,
    spec: SandboxSpec,
    *,
    bwrap: str | None = None,
    unavailable_reason: str | None = None,
    masked_paths: tuple[str, ...] = (),
    runs_here: bool = True,
    tty: bool = False,
    user: User | None = None,
    cwd_identity: CwdIdentity | None = None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The launch argv under bubblewrap and the env additions; refuses when unavailable.

    Without `bwrap`/`unavailable_reason` this host is probed; a backend that runs
    elsewhere (SSH) passes what it found on its own host and `runs_here=False`: its
    commands get the network namespace (network off) but not the seccomp filter, which only
    a child of this process can open, nor this host's masks. A `tty` command keeps its terminal as
    controlling terminal (no new session), so Ctrl-C typed into it still reaches it. `user`
    is who runs bubblewrap when not this process's user (`run_as`).
    """
    if spec.mode is SandboxMode.NONE:
        return argv, {}
    reason = sandbox_unavailable_reason() if unavailable_reason is None else unavailable_reason
    if reason or (bwrap is None and unavailable_reason is not None):
        # Never run a sandboxed request unsandboxed.
        raise SandboxUnavailableError(f"sandbox unavailable: {reason or 'bwrap not found'}")
    path = bwrap or shutil.which("bwrap") or "bwrap"
    if spec.proxied and not runs_here:
        raise SandboxUnavailableError(
            "egress control runs only where the environment's proxy is (not over SSH)"
        )
    seccomp = seccomp_filter_path(spec.network_access, spec.proxied) if runs_here else None
    # This host's token folders, whatever the caller configured (another host has its own).
    masks = (*service_dirs(), *masked_paths) if runs_here else masked_paths
    return bwrap_argv(
        path, argv, cwd, spec,
        masked_paths=masks, seccomp_path=seccomp, new_session=not tty,
        mount_proc=_local_probe()[1] if runs_here else True, user=user,
        cwd_identity=cwd_identity,
    )  # fmt: skip


def is_sandbox_denied(
    exit_code: int, signal: int | None, outputs: Mapping[str, str], sandboxed: bool
) -> bool:
    """The spec's sandbox-denial heuristic over stdout/stderr/aggregate text."""
    if not sandboxed or (exit_code == 0 and signal is None):
        return False
    for text in outputs.values():
        lowered = text.lower()
        if any(marker in lowered for marker in DENIAL_MARKERS):
            return True
    if exit_code in (2, 126, 127):
        return False
    return signal == _SIGSYS
