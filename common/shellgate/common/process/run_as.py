"""Running commands as another, unprivileged user (`run_as`), so they cannot read what the
service's own user owns (token files, TLS keys, its config, /proc of the daemon).

Each command is launched through util-linux `setpriv`, which sets the real and effective
uid and gid, the user's supplementary groups, and clears every capability set (inheritable,
ambient, bounding) before it execs the command. Clearing matters for a daemon that is not
root but holds CAP_SETUID/CAP_SETGID/CAP_KILL as ambient capabilities (the shipped systemd
units): without it the command would inherit them. The daemon keeps CAP_KILL (or root) to
signal its commands' groups.
"""

from __future__ import annotations

import os
import pwd
import shutil
from dataclasses import dataclass

from shellgate.common.sandbox import launch_prefix

# Capability numbers (linux/capability.h) a daemon needs to switch users.
_CAP_SETGID, _CAP_SETUID = 6, 7


class RunAsError(ValueError):
    """`run_as` cannot be honoured here (unknown user, root, no privilege, no setpriv)."""


def _effective_caps() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class RunAs:
    """The user commands run as, and the launcher that switches to it."""

    user: str
    uid: int
    gid: int
    setpriv: str

    @classmethod
    def resolve(cls, user: str) -> RunAs:
        """Check that this process can run commands as `user`; RunAsError says why not."""
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise RunAsError(f"run_as: no such user {user!r}") from None
        if entry.pw_uid == 0:
            raise RunAsError("run_as: must name an unprivileged user, not root")
        if entry.pw_uid == os.geteuid():
            raise RunAsError(f"run_as: {user!r} is the service's own user; name another one")
        caps = _effective_caps()
        if os.geteuid() != 0 and not (caps >> _CAP_SETUID & 1 and caps >> _CAP_SETGID & 1):
            raise RunAsError(
                "run_as: the service needs root or CAP_SETUID and CAP_SETGID "
                "(e.g. systemd AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL)"
            )
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise RunAsError("run_as: util-linux `setpriv` is not installed")
        return cls(user, entry.pw_uid, entry.pw_gid, setpriv)

    def wrap(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """The argv that runs `argv` as this user with no capabilities.

        A sandbox's seccomp trampoline stays in front: it opens the filter the service's
        process holds, which the other user could not open.
        """
        keep = launch_prefix(argv)
        return (
            *argv[:keep],
            self.setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups",
            "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--",
            *argv[keep:],
        )  # fmt: skip
