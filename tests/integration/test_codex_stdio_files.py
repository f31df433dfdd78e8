"""`shellgate-execserver codex-stdio` with stdin and stdout redirected to regular files
(`< requests.ndjson > answers.ndjson`): asyncio cannot watch a regular file, so it used to
die with "Pipe transport is only for pipes, sockets and character devices"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_codex_stdio_reads_and_writes_regular_files(tmp_path: Path) -> None:
    requests = tmp_path / "requests.ndjson"
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"clientName": "file-test"}}) + "\n"
        + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}}) + "\n"
    )  # fmt: skip
    answers = tmp_path / "answers.ndjson"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "shellgate.execserver.cli", "codex-stdio",
             "--root", str(tmp_path)],
            stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in proc.stderr
    first, second = (json.loads(line) for line in answers.read_text().splitlines())
    assert first["id"] == 1 and first["result"]["sessionId"]
    # The second initialize is refused in-band: the session read both lines from the file.
    assert second["id"] == 2 and "initialize may only be sent once" in second["error"]["message"]
