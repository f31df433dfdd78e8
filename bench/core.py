"""Run modes, bounded A/B sampling and sample statistics shared by every benchmark."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class Mode:
    """How hard to push: sizes, iteration caps and the per-bench wall-clock bound."""

    name: str
    warmup: int
    max_iterations: int
    max_seconds: float
    throughput_bytes: int
    concurrency: int
    e2e_bytes: int
    slow_consumer_bytes: int
    idle_sessions: int
    corpus_size: int
    rps_seconds: float


SMOKE = Mode("smoke", warmup=1, max_iterations=2, max_seconds=2.0, throughput_bytes=MIB,
             concurrency=4, e2e_bytes=MIB, slow_consumer_bytes=4 * MIB, idle_sessions=8,
             corpus_size=40, rps_seconds=0.5)  # fmt: skip
QUICK = Mode("quick", warmup=2, max_iterations=30, max_seconds=10.0,
             throughput_bytes=64 * MIB, concurrency=64, e2e_bytes=16 * MIB,
             slow_consumer_bytes=256 * MIB, idle_sessions=200, corpus_size=1000,
             rps_seconds=2.0)  # fmt: skip
FULL = Mode("full", warmup=5, max_iterations=200, max_seconds=25.0,
            throughput_bytes=256 * MIB, concurrency=64, e2e_bytes=64 * MIB,
            slow_consumer_bytes=1024 * MIB, idle_sessions=1000, corpus_size=1000,
            rps_seconds=5.0)  # fmt: skip
MODES = {m.name: m for m in (SMOKE, QUICK, FULL)}


@dataclass
class Stats:
    """Summary of one contender's samples (seconds, or any unit the bench names)."""

    n: int
    p50: float
    p99: float
    mean: float
    min: float
    max: float
    # Inter-quartile range relative to the median: how noisy the samples were.
    spread: float

    def as_dict(self) -> dict[str, float]:
        """JSON-ready fields."""
        return {k: round(v, 9) if isinstance(v, float) else v for k, v in vars(self).items()}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty sequence."""
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarize(samples: Sequence[float]) -> Stats:
    """Median, p99, mean, extremes and relative IQR of the samples."""
    if not samples:
        nan = float("nan")
        return Stats(0, nan, nan, nan, nan, nan, nan)
    values = sorted(samples)
    p50 = statistics.median(values)
    iqr = percentile(values, 75) - percentile(values, 25)
    return Stats(len(values), p50, percentile(values, 99), statistics.fmean(values),
                 values[0], values[-1], iqr / p50 if p50 else 0.0)  # fmt: skip


Sample = Callable[[], Awaitable[float]]


async def alternate(
    contenders: Mapping[str, Sample],
    mode: Mode,
    *,
    max_iterations: int | None = None,
    max_seconds: float | None = None,
    warmup: int | None = None,
) -> dict[str, list[float]]:
    """Run contenders in rotating order, round after round, until a cap or the deadline.

    Rotation (A B C, B C A, C A B, …) spreads drift — CPU frequency, page cache, other load —
    evenly over every contender instead of penalising whoever runs last.
    """
    names = list(contenders)
    cap = max_iterations if max_iterations is not None else mode.max_iterations
    budget = max_seconds if max_seconds is not None else mode.max_seconds
    for _ in range(mode.warmup if warmup is None else warmup):
        for name in names:
            await contenders[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    deadline = time.monotonic() + budget
    for i in range(cap):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            samples[name].append(await contenders[name]())
        # At least two rounds so every contender has a median worth the name.
        if time.monotonic() > deadline and i >= 1:
            break
    return samples


@dataclass
class Result:
    """One benchmark's outcome: per-contender stats, derived metrics and the target verdict."""

    name: str
    title: str
    target: str
    unit: str = "s"
    contenders: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    verdict: str = "skipped"  # met | missed | skipped | info
    note: str = ""
    seconds: float = 0.0

    def add(self, name: str, samples: Sequence[float], **extra: Any) -> Stats:
        """Record one contender's samples; returns their summary."""
        stats = summarize(samples)
        self.contenders[name] = {**stats.as_dict(), **extra}
        return stats

    def judge(self, ok: bool) -> None:
        """Set the verdict from the target check."""
        self.verdict = "met" if ok else "missed"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(vars(self))


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is zero or either is NaN."""
    if not b or math.isnan(a) or math.isnan(b):
        return float("nan")
    return a / b
