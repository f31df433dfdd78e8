"""`python -m bench --compare REF`: two commits of shellgate side by side in one run.

REF (any commit-ish) is exported with `git archive` into a temporary folder (no worktree
metadata is left in the repository) and its daemons and routers run from there, this
checkout's from here: both with the same clients in this process, the same child
environment and the same machine, alternated round by round like every other bench. The
rows: router Execute of `echo hi` (the v1 stream both commits speak, and each commit's
ExecuteOnce where it has one), the same through a remote environment (router → its own
daemon), Project over the corpus, ExecService Start of `true`. Each pair reports new / REF
p50; below 1 the new commit is faster.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
from shellgate.v1 import router_pb2

from bench.clients import router, sg_exec
from bench.clients.common import RunTimes
from bench.core import Mode, Result, alternate, ratio
from bench.corpus import corpus
from bench.peers import REPO, Peers
from bench.procs import scratch_home
from bench.suites.router_benches import _router_channel

Sample = Callable[[], Awaitable[float]]


@contextlib.contextmanager
def exported(ref: str) -> Iterator[tuple[Path, str]]:
    """REF's files in a temporary folder, and its short hash."""
    short = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", ref],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sg-bench-ref-") as tmp:
        archive = Path(tmp) / "ref.tar"
        subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), ref],
            check=True,
        )  # fmt: skip
        tree = Path(tmp) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        yield tree, short


def _seconds(run: Callable[[], Awaitable[RunTimes]]) -> Sample:
    async def sample() -> float:
        return (await run()).closed

    return sample


async def _has_execute_once(stub: Any) -> bool:
    try:
        await stub.ExecuteOnce(router_pb2.ExecuteOnceRequest(), timeout=10)
    except AttributeError:
        return False
    except grpc.aio.AioRpcError as exc:
        return exc.code() != grpc.StatusCode.UNIMPLEMENTED
    return True


async def _sides(peers: Peers, tag: str) -> dict[str, Sample]:
    """Every contender of one commit, named `<row>@<tag>`."""
    out: dict[str, Sample] = {}
    stub, _ = router.stubs(await _router_channel(peers))
    turn_pb = router.turn(peers.home)
    item = router.shell_item("echo hi")
    out[f"execute@{tag}"] = _seconds(lambda: router.execute(stub, item, turn_pb))
    if await _has_execute_once(stub):
        out[f"execute_once@{tag}"] = _seconds(lambda: router.execute_once(stub, item, turn_pb))
    remote, _ = router.stubs(await _router_channel(peers, remote=True))
    remote_turn = router.turn(peers.home, environment=peers.REMOTE_ENVIRONMENT)
    remote_item = router.exec_item("echo hi")
    out[f"remote@{tag}"] = _seconds(lambda: router.execute(remote, remote_item, remote_turn))
    if await _has_execute_once(remote):
        out[f"remote_once@{tag}"] = _seconds(
            lambda: router.execute_once(remote, remote_item, remote_turn)
        )
    requests = [router.project_request(i, turn_pb) for i in corpus(200)]
    cursor = itertools.count()

    async def project() -> float:
        req = requests[next(cursor) % len(requests)]
        t0 = time.perf_counter()
        await stub.Project(req)
        return time.perf_counter() - t0

    out[f"project@{tag}"] = project
    exec_stub = await peers.enter_async(sg_exec.exec_stub(peers.daemon().address))
    out[f"spawn@{tag}"] = _seconds(lambda: sg_exec.run(exec_stub, ["true"], peers.env, peers.home))
    return out


async def compare(ref: str, mode: Mode) -> Result:
    """The compare row: this checkout ("new") against REF, alternated in one run."""
    with exported(ref) as (tree, short), scratch_home() as home_new, scratch_home() as home_ref:
        new, old = Peers(home_new), Peers(home_ref, tree=tree)
        try:
            contenders = {**await _sides(new, "new"), **await _sides(old, short)}
            samples = await alternate(contenders, mode)
        finally:
            await new.aclose()
            await old.aclose()
    res = Result(
        "compare", f"this checkout vs {ref} ({short}), side by side",
        "new / ref p50 (below 1: new is faster)", unit="ms",
    )  # fmt: skip
    stats = {name: res.add(name, [v * 1e3 for v in values]) for name, values in samples.items()}
    for row in ("execute", "execute_once", "remote", "remote_once", "project", "spawn"):
        if f"{row}@new" in stats and f"{row}@{short}" in stats:
            res.metrics[f"{row}_new_vs_ref_p50"] = ratio(
                stats[f"{row}@new"].p50, stats[f"{row}@{short}"].p50
            )
    # The fast path of the new commit against the v1 stream of the old one.
    if "execute_once@new" in stats and f"execute_once@{short}" not in stats:
        res.metrics["execute_once_new_vs_ref_stream_p50"] = ratio(
            stats["execute_once@new"].p50, stats[f"execute@{short}"].p50
        )
    if "remote_once@new" in stats and f"remote_once@{short}" not in stats:
        res.metrics["remote_once_new_vs_ref_stream_p50"] = ratio(
            stats["remote_once@new"].p50, stats[f"remote@{short}"].p50
        )
    res.verdict = "info"
    res.note = (
        f"`python -m bench --compare {ref}`: REF exported with git archive, its daemon and "
        "routers run from there (PYTHONPATH), this checkout's from here; same clients; "
        "contenders alternated; Project cycles 200 corpus items (the new commit answers "
        "repeats from its kept answers)"
    )
    return res
