"""Tiny supervisor run between the daemon and each child (stdlib only, run with -I -S).

argv: _shim.py STATUS_FD PARENT_PID TTY(0|1) -- PROGRAM ARG0 ARGS...

It becomes a session and process-group leader (taking the PTY on fd 0 as controlling
terminal when TTY=1), arms a parent-death signal, forks the real child into its own group,
reports `ok <pid>` or `err <errno> <text>` on STATUS_FD, and exits with the child's status
(re-raising the child's signal). When the daemon dies, the kernel sends SIGTERM; the shim
then SIGKILLs the whole group, so no child outlives a crashed daemon.
"""

import os
import signal
import sys


def _arm_parent_death() -> None:
    # PR_SET_PDEATHSIG = 1. ctypes is stdlib; without it the group sweep still covers
    # orderly shutdowns.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def main() -> None:
    status_fd = int(sys.argv[1])
    parent = int(sys.argv[2])
    tty = sys.argv[3] == "1"
    program, argv = sys.argv[5], sys.argv[6:]
    # The real child must not inherit the status pipe, or the daemon never sees its EOF.
    os.set_inheritable(status_fd, False)
    os.setsid()
    if tty:
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    _arm_parent_death()

    def on_signal(signo: int, _frame: object) -> None:
        # Signals sent to the group also reach us: ignore them unless the daemon is gone
        # (we were re-parented), in which case take the whole group down.
        if os.getppid() != parent:
            os.killpg(0, signal.SIGKILL)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, on_signal)
    if os.getppid() != parent:
        os.killpg(0, signal.SIGKILL)

    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(err_r)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.execvp(program, argv)
        except OSError as exc:
            os.write(err_w, f"{exc.errno} {exc.strerror}: {program!r}".encode())
        finally:
            os._exit(127)
    os.close(err_w)
    failure = b""
    while True:
        part = os.read(err_r, 4096)
        if not part:
            break
        failure += part
    os.close(err_r)
    if failure:
        os.write(status_fd, b"err " + failure)
        os.close(status_fd)
        os.waitpid(pid, 0)
        os._exit(127)
    os.write(status_fd, f"ok {pid}".encode())
    os.close(status_fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signo = os.WTERMSIG(status)
        if signo not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signo, signal.SIG_DFL)
        os.kill(os.getpid(), signo)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
