"""The in-sandbox bridge: a loopback port inside the command's network namespace that leads
to the egress proxy's unix socket, and nowhere else.

bubblewrap still gives the command an empty network namespace (`--unshare-net`); in it this
launcher (run by the host's Python, standard library only) listens on 127.0.0.1:`PORT`,
forks the bridge away from the command, then loads the command's seccomp filter itself
(read from fd 3, where bubblewrap's `--seccomp` would have read it) and execs the command.
The bridge is not the command's child (a double fork leaves it to the namespace's init), is
not dumpable (no ptrace, no /proc/PID/mem), holds none of the command's stdio (its output
ends when the command's does), and dies with the namespace when the command ends. The
command's filter (`seccomp`'s proxied variant) refuses `AF_UNIX` sockets and ptrace, so the
bridge's port is its one way out; each forwarded connection starts with the route id.
"""

from __future__ import annotations

import sys

__all__ = ["PORT", "bridge_argv", "proxy_env"]

# Codex's default HTTP proxy port; inside a namespace of its own nothing else can hold it.
PORT = 3128
_URL = f"http://127.0.0.1:{PORT}"

SOURCE = r"""
import ctypes, os, socket, sys, threading
sock_path, route, port = sys.argv[1], sys.argv[2].encode() + b"\n", int(sys.argv[3])
argv = sys.argv[5:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
libc = ctypes.CDLL(None, use_errno=True)


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def carry(client):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(sock_path)
        upstream.sendall(route)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve():
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the command cannot ptrace or poke it
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 3 + 1)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=carry, args=(client,), daemon=True).start()


pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        try:
            serve()
        finally:
            os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
listener.close()
program = os.read(3, 1 << 16)
while True:
    more = os.read(3, 1 << 16)
    if not more:
        break
    program += more
os.close(3)


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


buf = ctypes.create_string_buffer(program, len(program))
prog = Prog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
# PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP / SECCOMP_MODE_FILTER: fail closed.
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
    sys.stderr.write("shellgate: cannot load the sandbox's seccomp filter: "
                     + os.strerror(ctypes.get_errno()) + "\n")
    os._exit(126)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
    os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
"""


def bridge_argv(socket_path: str, route_id: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    """The launcher's argv inside the sandbox, ending with the command's."""
    # -I -S: nothing from the command's environment or the working directory is imported.
    return (sys.executable, "-I", "-S", "-c", SOURCE, socket_path, route_id, str(PORT), "--",
            *argv)  # fmt: skip


def proxy_env() -> dict[str, str]:
    """What points a command's tools at the bridge (as Codex sets them, plus SOCKS5)."""
    env = {key: _URL for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    socks = f"socks5h://127.0.0.1:{PORT}"
    env.update({"ALL_PROXY": socks, "all_proxy": socks})
    return env
