"""Shared pieces for running the real Codex binary against a scripted Responses endpoint.

The endpoint is the product's own (`shellgate.execserver.codex.scripted_model`, what
`shellgate-execserver codex-check` runs Codex against): it lives on 127.0.0.1 and answers
every `POST /v1/responses` with one SSE stream chosen by a `script` callable from the request
body; every body is recorded so a test can compare what Codex sent back to the model (its
`function_call_output` items).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from shellgate.execserver.codex.check_common import CODEX_VERSION
from shellgate.execserver.codex.scripted_model import (
    Script,
    ScriptedResponses,
    custom_call,
    final_message,
    function_call,
    stream,
)

__all__ = [
    "CODEX_VERSION", "Script", "ScriptedResponses", "codex_env", "codex_version",
    "custom_call", "final_message", "find_codex", "function_call", "stream", "write_config",
]  # fmt: skip


def find_codex() -> Path | None:
    """The pinned codex binary (the repo's .tools install or PATH), None when absent."""
    for root in (Path(__file__).resolve().parents[2], Path("/work/main")):
        candidate = root / ".tools" / "node_modules" / ".bin" / "codex"
        if candidate.exists():
            return candidate
    found = shutil.which("codex")
    return Path(found) if found else None


def codex_version(codex: Path) -> str:
    """`codex --version`'s number."""
    out = subprocess.run([str(codex), "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip().rsplit(" ", 1)[-1]


def write_config(home: Path, port: int, extra: str = "", model: str = "gpt-5.1-codex") -> None:
    """A CODEX_HOME config.toml whose model provider is the scripted endpoint on `port`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "oracle"\n'
        + extra
        + "[model_providers.oracle]\n"
        f'name = "oracle"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        'wire_api = "responses"\nenv_key = "ORACLE_API_KEY"\n',
        encoding="utf-8",
    )


def codex_env(home: Path) -> dict[str, str]:
    """The environment codex runs with (temp CODEX_HOME, dummy key, quiet logs)."""
    return {**os.environ, "CODEX_HOME": str(home), "ORACLE_API_KEY": "dummy",
            "SHELL": "/bin/bash", "RUST_LOG": "error", "NO_COLOR": "1"}  # fmt: skip
