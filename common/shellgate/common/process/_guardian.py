"""Group guardian run once per local backend (stdlib only, run with -I -S).

stdin carries `+PGID` / `-PGID` lines from the daemon: groups to protect and groups that are
gone. When stdin reaches EOF — the daemon closed it, exited, or was SIGKILLed (the kernel
closes its fds) — every group still registered gets the parent-death signal, SIGTERM (spec
05 §1.1), and whatever is left of a group after a short grace is SIGKILLed, so no child or
grandchild outlives a crashed daemon. The groups of every descendant of a registered
group's members are included: a descendant that left its group with `setsid` is still
below its command in the process tree.
"""

import contextlib
import os
import signal
import time

# After each read the guardian naps this long, so a burst of spawns queues its lines in the
# pipe instead of waking (and scheduling) the guardian once per line; EOF is still seen
# within this bound, and everything written before it is read first.
_BATCH_S = 0.05
# After the SIGTERM, how long the groups get before the SIGKILL.
_GRACE_S = 1.0
_POLL_S = 0.02


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _with_descendants(groups: set[int]) -> set[int]:
    """The groups, plus the groups of every descendant of their members (one /proc scan)."""
    parent: dict[int, int] = {}
    group: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parent[int(name)], group[int(name)] = int(fields[1]), int(fields[2])
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found = set(groups)
    todo = [pid for pid, pgid in group.items() if pgid in groups]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, ()):
            found.add(group[child])
            todo.append(child)
    found.discard(os.getpgid(0))
    return found


def main() -> None:
    # Only EOF ends the guardian: terminal or group signals aimed at the daemon must not
    # take it down first and leave the groups unprotected.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    pending = b""
    while True:
        try:
            data = os.read(0, 65536)
        except InterruptedError:
            continue
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line[:1] == b"+" and line[1:].isdigit():
                groups.add(int(line[1:]))
            elif line[:1] == b"-" and line[1:].isdigit():
                groups.discard(int(line[1:]))
        time.sleep(_BATCH_S)
    groups = _with_descendants(groups)
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while any(_alive(pgid) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    # Descendants forked during the grace are below the same members: look again.
    for pgid in _with_descendants(groups):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
