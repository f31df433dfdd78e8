"""The user's own `codex` running one scripted turn on one environment, in a throwaway home.

The temporary `CODEX_HOME` holds exactly two files: a `config.toml` whose model provider is
the scripted endpoint on 127.0.0.1 (`base_url`, `wire_api = "responses"`, a dummy key in
`env_key`), and an `environments.toml` with only the checked entry (`check_environments.
pinned_copy`). Nothing of the user's Codex home — `auth.json`, `config.toml`, sessions — is
read, and Codex's credential variables are not passed on. The scripted model asks for one
`exec_command` whose output proves it ran: `printf` joins a marker the command line itself
does not contain, then `uname -n` names the host that ran it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shellgate.execserver.codex.check_common import CODEX_VERSION, CheckFailed, Deadline
from shellgate.execserver.codex.check_environments import Environment, pinned_copy, write_private
from shellgate.execserver.codex.check_probe import is_credential_name
from shellgate.execserver.codex.scripted_model import (
    Event,
    Script,
    ScriptedResponses,
    final_message,
    function_call,
    output_text,
    stream,
    tool_outputs,
)

SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
CALL_ID = "codex-check-1"
# A model Codex 0.169 offers exec_command to (unified exec), as its own sessions use.
MODEL = "gpt-5.5"
PROVIDER = "shellgate-codex-check"
KEY_VAR = "SHELLGATE_CODEX_CHECK_KEY"
VERSION_TIMEOUT_S = 30.0
# After the deadline codex gets TERM (it stops its stdio programs), then KILL after this.
STOP_GRACE_S = 5.0
NO_ENVIRONMENT = "No usable execution environment"


def find_codex(given: str) -> str:
    """The codex executable `given` names (a path, or a name on PATH)."""
    found = given if os.sep in given else shutil.which(given)
    if found is None:
        raise CheckFailed(f"codex not found: `{given}` is not on PATH (npm i -g "
                          f"@openai/codex@{CODEX_VERSION}, or pass --codex PATH)")  # fmt: skip
    if not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise CheckFailed(f"codex not found: {found} is not an executable file")
    return found


def codex_version(codex: str, deadline: Deadline) -> str:
    """`codex --version`'s line, when it is the pinned version (else CheckFailed)."""
    try:
        done = subprocess.run(
            [codex, "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
            env=codex_environ(os.environ, None), timeout=deadline.left(VERSION_TIMEOUT_S),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"`{codex} --version` did not answer in time") from None
    except OSError as exc:
        raise CheckFailed(f"cannot run {codex}: {exc.strerror or exc}") from None
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not line:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckFailed(f"`{codex} --version` failed (exit {done.returncode}): {said[:200]}")
    version = line.rsplit(" ", 1)[-1]
    if version != CODEX_VERSION:
        raise CheckFailed(f"{codex} is {line}; shellgate-execserver speaks the exec-server "
                          f"protocol of Codex {CODEX_VERSION} (npm i -g "
                          f"@openai/codex@{CODEX_VERSION}; docs/codex.md)")  # fmt: skip
    return line


def codex_environ(environ: Mapping[str, str], home: Path | None) -> dict[str, str]:
    """This environment without Codex's and OpenAI's variables, plus the check's own."""
    env = {k: v for k, v in environ.items() if not is_credential_name(k)}
    env.update({KEY_VAR: "codex-check", "NO_COLOR": "1", "RUST_LOG": "error"})
    if home is not None:
        env["CODEX_HOME"] = str(home)
    return env


def config_toml(base_url: str, sandbox: str) -> str:
    """The temporary home's config.toml: the scripted provider, no approvals."""
    return (
        f'model = "{MODEL}"\nmodel_provider = "{PROVIDER}"\napproval_policy = "never"\n'
        f'sandbox_mode = "{sandbox}"\n\n[model_providers.{PROVIDER}]\nname = "{PROVIDER}"\n'
        f'base_url = "{base_url}"\nwire_api = "responses"\nenv_key = "{KEY_VAR}"\n'
    )


def check_command(nonce: str) -> tuple[str, str]:
    """(the command, the marker its output must hold); the marker is not in the command."""
    return (
        f"printf '%s-%s\\n' shellgate-codex-check {nonce}; uname -n",
        f"shellgate-codex-check-{nonce}",
    )


def _script(command: str) -> Script:
    def answer(body: Mapping[str, Any]) -> list[Event]:
        if tool_outputs(body):
            return stream(final_message("codex-check: done"))
        # workdir "/": the turn's own cwd is a local temporary folder a remote host lacks.
        return stream(function_call("exec_command", CALL_ID, {"cmd": command, "workdir": "/"}))

    return answer


def run_turn(codex: str, env: Environment, sandbox: str, deadline: Deadline) -> str:
    """Run the scripted turn on `env`; the report line, or CheckFailed naming what failed."""
    command, marker = check_command(secrets.token_hex(4))
    with tempfile.TemporaryDirectory(prefix="shellgate-codex-check-") as tmp, \
            ScriptedResponses(_script(command)) as model:  # fmt: skip
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir(mode=0o700)
        work.mkdir()
        (home / "config.toml").write_text(config_toml(model.base_url, sandbox), encoding="utf-8")
        write_private(home / "environments.toml", pinned_copy(env))
        argv = [codex, "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never",
                "-C", str(work), "Run the check's command."]  # fmt: skip
        returncode, stderr = _run(argv, codex_environ(os.environ, home), deadline)
        bodies = model.bodies
    if returncode != 0:
        raise CheckFailed(f"codex exec failed (exit {returncode}): {_codex_error(stderr)}")
    outputs = [o for b in bodies for o in tool_outputs(b) if o.get("call_id") == CALL_ID]
    if not outputs:
        raise CheckFailed("codex exec finished without running the check's command "
                          f"(its model got no answer): {_codex_error(stderr)}")  # fmt: skip
    host = _ran(env, output_text(outputs[-1]), marker, sandbox)
    return (f"ran remotely: `{command}` through exec_command (sandbox {sandbox}): marker "
            f"printed on host {host!r}, exit code 0")  # fmt: skip


def _run(argv: list[str], environ: dict[str, str], deadline: Deadline) -> tuple[int, str]:
    """Run codex to its end within the deadline; (exit code, stderr)."""
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=environ, text=True, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise CheckFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        _, stderr = proc.communicate(timeout=deadline.left())
        return proc.returncode, stderr
    except subprocess.TimeoutExpired:
        # TERM first: codex then stops the stdio programs it started (their own groups).
        for signo in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signo)
            try:
                proc.communicate(timeout=STOP_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        raise CheckFailed(f"codex exec did not finish the turn within the check's "
                          f"{deadline.seconds:g} s (--timeout)") from None  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _codex_error(stderr: str) -> str:
    """The line of codex's stderr that says what went wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Error:") or " ERROR " in line:
            return line[:300]
    return lines[-1][:300] if lines else "no message"


def _ran(env: Environment, text: str, marker: str, sandbox: str) -> str:
    """The host that ran the command, from the model-facing output (else CheckFailed)."""
    if NO_ENVIRONMENT in text:
        raise CheckFailed(f'environment "{env.id}": answered the check directly, but Codex '
                          f"could not use it: {text.strip()[:300]}")  # fmt: skip
    exited = re.search(r"Process exited with code (-?\d+)", text)
    output = text.split("\nOutput:\n", 1)[1] if "\nOutput:\n" in text else ""
    lines = output.splitlines()
    if exited is None:
        raise CheckFailed(f'environment "{env.id}": the command did not run: '
                          f"{text.strip().splitlines()[0][:300] if text.strip() else 'no output'}")  # fmt: skip
    last = next((ln for ln in reversed(lines) if ln.strip()), "no output")[:300]
    if exited.group(1) != "0":
        hint = ""
        if sandbox != "danger-full-access" and re.search(r"sandbox|bwrap", output, re.I):
            hint = " (--sandbox danger-full-access checks the rest without the sandbox)"
        raise CheckFailed(f'environment "{env.id}": the command exited with code '
                          f"{exited.group(1)}: {last}{hint}")  # fmt: skip
    if marker not in lines:
        raise CheckFailed(f'environment "{env.id}": the command exited with code 0 but its '
                          f"output lacks the marker {marker}: {last}")  # fmt: skip
    after = lines[lines.index(marker) + 1 :]
    return after[0].strip() if after else "?"
