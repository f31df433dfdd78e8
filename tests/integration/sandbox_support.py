"""What the sandbox tests share: a router whose `local` environment and a daemon `box` both
run commands in one folder of this host, and the probe scripts' one-line JSON answer."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import Router, router_config, running_router


@contextlib.contextmanager
def router_with_daemon(work: Path) -> Iterator[Router]:
    """A router whose `local` environment and `box` daemon both run commands in `work`."""
    with daemon_subprocess(["--root", str(work)]) as daemon:
        box = RemoteConfig("box", daemon.target, dial=DialSettings(insecure=True))
        with running_router(router_config(local_cwd=str(work), environments=(box,))) as router:
            yield router


def probe_answers(text: str) -> dict[str, str | None]:
    """The answers a probe script printed as `PROBE {json}` (AssertionError when none)."""
    line = next((line for line in text.splitlines() if line.startswith("PROBE ")), None)
    assert line is not None, text
    answers: dict[str, str | None] = json.loads(line.removeprefix("PROBE "))
    return answers
