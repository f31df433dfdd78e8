"""Reach one `environments.toml` entry as Codex would and open a session: the named failures.

Codex itself only tells its model `No usable execution environment is available…` whatever
went wrong, so the check first does what Codex does at the start of a turn — connect (TCP,
then the WebSocket upgrade with the entry's `auth_bearer_token`, as Codex 0.169 sends it:
`Authorization: Bearer`, no Origin), or spawn the stdio `program` — and sends `initialize`;
each way this can fail becomes one line naming the cause.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from shellgate.execserver.codex.check_common import CheckFailed, Deadline
from shellgate.execserver.codex.check_environments import Environment
from websockets.exceptions import InvalidHandshake, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

INITIALIZE = {"id": 1, "method": "initialize", "params": {"clientName": "shellgate-codex-check"}}
# Codex's own ceiling for one message; an initialize answer is far smaller.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A stdio program gets this long to exit after its stdin closes, then TERM, then KILL (as
# Codex stops its stdio programs: the group gets TERM, then KILL after 2 s).
STDIO_EXIT_GRACE_S = 5.0
STDIO_KILL_GRACE_S = 2.0
_STATUS = {
    421: "refused the Host header {hostport} (421): the url's host is not a name the listener "
    "answers to (its bind address, a loopback spelling on a loopback bind, or a "
    "--codex-host NAME)",
    403: "refused the connection's Origin (403): something between Codex and the daemon adds "
    "an Origin header",
    503: "is at its connection limit (503 too many connections, [codex_ws] max_connections)",
    404: "has no WebSocket endpoint at this url (404)",
}


def probe(env: Environment, deadline: Deadline) -> list[str]:
    """Reach `env` and initialize a session; report lines, or CheckFailed."""
    if env.url:
        return _probe_ws(env, deadline)
    return _probe_stdio(env, deadline)


def _failed(env: Environment, problem: str) -> CheckFailed:
    return CheckFailed(f'environment "{env.id}" ({env.describe()}): {problem}')


def _session_id(env: Environment, raw: str | bytes) -> str:
    """The `sessionId` of an initialize answer (CheckFailed for anything else)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        raise _failed(env, f"answered initialize with something that is not JSON: "
                      f"{_first_line(raw)}") from None  # fmt: skip
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
        error = answer.get("error") if isinstance(answer, dict) else None
        detail = error.get("message") if isinstance(error, dict) else _first_line(raw)
        raise _failed(env, f"refused initialize: {detail}")
    return str(result["sessionId"])


def _first_line(raw: str | bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    lines = text.strip().splitlines()
    return lines[0][:limit] if lines else "(empty)"


def _probe_ws(env: Environment, deadline: Deadline) -> list[str]:
    parts = urlsplit(env.url)
    host, secure = parts.hostname or "", parts.scheme == "wss"
    port = parts.port or (443 if secure else 80)
    hostport = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=deadline.left(env.connect_timeout_s))
    except ConnectionRefusedError:
        raise _failed(env, f"nothing listens on {hostport} (connection refused): is "
                      f"`shellgate-execserver serve --codex-listen {parts.scheme}://{hostport}` "
                      "running?") from None  # fmt: skip
    except TimeoutError:
        raise _failed(env, f"{hostport} did not accept a connection within "
                      f"{env.connect_timeout_s:g} s") from None  # fmt: skip
    except OSError as exc:
        raise _failed(env, f"cannot connect to {hostport}: {exc.strerror or exc}") from None
    lines = [f"reachable: {hostport} accepts connections"]
    with contextlib.closing(sock):
        with _upgrade(env, sock, secure, hostport, deadline) as ws:
            try:
                ws.send(json.dumps(INITIALIZE))
                reply = ws.recv(timeout=deadline.left(env.initialize_timeout_s))
            except TimeoutError:
                raise _failed(env, "the connection opened but initialize got no answer within "
                              f"{env.initialize_timeout_s:g} s") from None  # fmt: skip
            except WebSocketException as exc:
                raise _failed(env, f"closed the connection after the upgrade: {exc}") from None
        session = _session_id(env, reply)
    how = ("the bearer token was accepted" if env.token is not None
           else "no token needed (the listener trusts every local user)")  # fmt: skip
    lines.append(f"authenticated: {how}; initialize answered (session {session})")
    return lines


def _upgrade(
    env: Environment, sock: socket.socket, secure: bool, hostport: str, deadline: Deadline
) -> ClientConnection:
    """The WebSocket upgrade Codex makes, or the refusal named."""
    headers = {} if env.token is None else {"Authorization": f"Bearer {env.token}"}
    try:
        return connect(
            env.url, sock=sock, ssl=ssl.create_default_context() if secure else None,
            additional_headers=headers, open_timeout=deadline.left(env.connect_timeout_s),
            close_timeout=STDIO_KILL_GRACE_S, compression=None, proxy=None,
            user_agent_header="shellgate-execserver codex-check", max_size=MAX_MESSAGE_BYTES,
        )  # fmt: skip
    except InvalidStatus as exc:
        raise _failed(env, _refusal(env, exc.response.status_code, exc.response.body,
                                    hostport)) from None  # fmt: skip
    except ssl.SSLCertVerificationError as exc:
        raise _failed(env, f"its TLS certificate is not trusted: {exc.verify_message}") from None
    except TimeoutError:
        raise _failed(env, "no answer to the WebSocket upgrade within "
                      f"{env.connect_timeout_s:g} s") from None  # fmt: skip
    except (InvalidHandshake, OSError) as exc:
        raise _failed(env, f"the WebSocket upgrade failed: {exc}") from None


def _refusal(env: Environment, status: int, body: bytes | bytearray, hostport: str) -> str:
    port = hostport.rpartition(":")[2]
    if status == 401 and env.token is None:
        return ("the daemon requires a bearer token (401) and the entry has no "
                "auth_bearer_token: add auth_bearer_token = \"<what `shellgate-execserver "
                f"token --port {port}` prints>\"")  # fmt: skip
    if status == 401:
        return ("the daemon refused the auth_bearer_token (401): it is wrong or stale (a "
                "generated token is new at every start of the daemon: `shellgate-execserver "
                f"token --port {port}` prints the current one)")  # fmt: skip
    if status in _STATUS:
        return "the daemon " + _STATUS[status].format(hostport=hostport)
    return f"answered HTTP {status} instead of upgrading: {_first_line(bytes(body))}"


def _probe_stdio(env: Environment, deadline: Deadline) -> list[str]:
    argv = [env.program, *env.args]
    shown = " ".join(argv)
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                env=probe_environ(os.environ, env.env), cwd=env.cwd or None,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise _failed(env, f"cannot start `{env.program}`: {exc.strerror or exc}") from None
        try:
            wait_s = deadline.left(env.initialize_timeout_s)
            line = _initialize_stdio(proc, wait_s)
            exited = proc.poll()  # before the EOF below makes it exit
        finally:
            _stop_stdio(proc)
        if line is None:
            errors.seek(0)
            said = errors.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
            why = f": {said[-1][:200]}" if said else ""
            state = (f"gave no answer to initialize within {wait_s:.3g} s"
                     if exited is None else f"exited with code {exited} before answering "
                     "initialize")  # fmt: skip
            raise _failed(env, f"`{shown}` {state}{why}")
    session = _session_id(env, line)
    return [f"reachable: `{shown}` started and answered initialize (session {session})",
            "authenticated: not needed (a stdio program: the pipe is Codex's own)"]  # fmt: skip


def probe_environ(environ: Mapping[str, str], overlay: Mapping[str, str]) -> dict[str, str]:
    """What a stdio program gets: this environment without model credentials, plus `env`."""
    kept = {k: v for k, v in environ.items() if not is_credential_name(k)}
    return {**kept, **overlay}


def is_credential_name(name: str) -> bool:
    """Codex's own variables (CODEX_API_KEY, CODEX_ACCESS_TOKEN, …) and OpenAI keys.

    The check's Codex authenticates to the scripted model with a dummy key and reads nothing
    of the user's: these never reach it, nor the programs it starts.
    """
    return name.startswith(("OPENAI_", "CODEX_", "AZURE_OPENAI_"))


def _initialize_stdio(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes | None:
    """Send initialize; the first answer line within the timeout (None: EOF or no answer)."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
    except OSError:
        return None  # it exited before reading: the caller reports how
    end = time.monotonic() + timeout_s
    buffered = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < end:
            if not sel.select(timeout=max(end - time.monotonic(), 0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if _answers_initialize(line):
                    return line
            if len(buffered) > MAX_MESSAGE_BYTES:
                return buffered
    return None


def _answers_initialize(line: bytes) -> bool:
    """A line that is the answer to request 1 (notifications and blank lines are skipped)."""
    if not line.strip():
        return False
    try:
        message: Any = json.loads(line)
    except ValueError:
        return True  # not the protocol: _session_id names it
    return not isinstance(message, dict) or message.get("id") == INITIALIZE["id"]


def _stop_stdio(proc: subprocess.Popen[bytes]) -> None:
    """Close its stdin (EOF ends a session), then TERM and KILL its group if it lingers."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    for signo, grace in ((None, STDIO_EXIT_GRACE_S), (signal.SIGTERM, STDIO_KILL_GRACE_S),
                         (signal.SIGKILL, None)):  # fmt: skip
        if signo is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signo)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
