"""The Codex-protocol listener (`shellgate-execserver --codex-listen`) against Codex's own
`codex exec-server`: the same JSON-RPC-over-websocket client on both, nothing else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bench.core import MIB, Mode, Result, alternate, ratio
from bench.peers import Peers, codex_available
from bench.suites.exec_benches import Runner, runners

FRONT_LABEL = "shellgate-execserver --codex-listen (Codex's protocol, the codex client)"


async def _pair(peers: Peers) -> dict[str, Runner] | None:
    if codex_available() is not None:
        return None
    run = await runners(peers)
    return {"shellgate_codex": run["shellgate_codex"], "codex": run["codex"]}


def _skipped(res: Result) -> Result:
    res.verdict = "skipped"
    res.note = f"Codex peer not available: {codex_available()}"
    return res


async def bench_codex_spawn(peers: Peers, mode: Mode) -> Result:
    """`true` start → exit over Codex's protocol: shellgate's listener vs Codex's server."""
    res = Result("codex_spawn", "spawn `true` over Codex's protocol (`process/start`)",
                 "≥ 20× faster than codex exec-server", unit="ms")  # fmt: skip
    pair = await _pair(peers)
    if pair is None:
        return _skipped(res)

    def timed(run: Runner) -> Callable[[], Awaitable[float]]:
        async def sample() -> float:
            times = await run(["true"])
            return times.exited or times.closed

        return sample

    samples = await alternate({name: timed(r) for name, r in pair.items()}, mode)
    stats = {name: res.add(name, [v * 1e3 for v in values]) for name, values in samples.items()}
    res.contenders["shellgate_codex"]["label"] = FRONT_LABEL
    speedup = ratio(stats["codex"].p50, stats["shellgate_codex"].p50)
    res.metrics = {"speedup_vs_codex_p50": speedup,
                   "speedup_vs_codex_p99": ratio(stats["codex"].p99, stats["shellgate_codex"].p99)}
    res.judge(speedup >= 20)
    res.note = "times to the `exited` notification; argv run directly, the same child env"
    return res


async def bench_codex_throughput(peers: Peers, mode: Mode) -> Result:
    """`head -c N /dev/zero` over Codex's protocol (`process/output`), MiB/s."""
    n = mode.throughput_bytes
    res = Result("codex_throughput", f"output throughput over Codex's protocol, {n // MIB} MiB",
                 "≥ 4× codex exec-server, no output lost", unit="MiB/s")  # fmt: skip
    pair = await _pair(peers)
    if pair is None:
        return _skipped(res)
    argv = ["head", "-c", str(n), "/dev/zero"]
    delivered: dict[str, list[int]] = {name: [] for name in pair}

    def mibs(name: str, run: Runner) -> Callable[[], Awaitable[float]]:
        async def sample() -> float:
            times = await run(argv)
            delivered[name].append(times.nbytes)
            return times.nbytes / MIB / times.closed

        return sample

    cap = max(2, min(mode.max_iterations, 10))
    samples = await alternate({name: mibs(name, r) for name, r in pair.items()}, mode,
                              max_iterations=cap, warmup=min(mode.warmup, 2))  # fmt: skip
    stats = {name: res.add(name, values) for name, values in samples.items()}
    res.contenders["shellgate_codex"]["label"] = FRONT_LABEL
    lossless = min(delivered["shellgate_codex"] or [0]) == n
    speedup = ratio(stats["shellgate_codex"].p50, stats["codex"].p50)
    res.metrics = {"speedup_vs_codex_p50": speedup, "shellgate_codex_lossless": lossless}
    res.judge(speedup >= 4 and lossless)
    res.note = "goodput = bytes delivered / (process/start → closed); the client reads sizes only"
    return res


CODEX_BENCHES: dict[str, Any] = {
    "codex_spawn": bench_codex_spawn,
    "codex_throughput": bench_codex_throughput,
}
