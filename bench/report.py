"""Write results: bench/results/latest.json and the Markdown table in bench/README.md."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bench.machine import one_line

BEGIN = "<!-- bench:results:begin -->"
END = "<!-- bench:results:end -->"
COMPARE_BEGIN = "<!-- bench:compare:begin -->"
COMPARE_END = "<!-- bench:compare:end -->"


def _fmt(value: Any, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        text = f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    else:
        text = str(value)
    return f"{text} {unit}".strip()


def _cell(stats: dict[str, Any], unit: str) -> str:
    cell = f"p50 {_fmt(stats.get('p50'), unit)}"
    if stats.get("n", 0) > 1:
        cell += f" · p99 {_fmt(stats.get('p99'))} · ±{_fmt(100 * stats.get('spread', 0))}% IQR"
    if "req_per_s" in stats:
        cell += f" · {_fmt(stats['req_per_s'])} req/s"
    if stats.get("worst_loss_fraction"):
        cell += f" · **lost {100 * stats['worst_loss_fraction']:.0f}%**"
    return cell


def _metrics(metrics: dict[str, Any]) -> str:
    parts = []
    for key, value in metrics.items():
        parts.append(f"{key.replace('_', ' ')} {_fmt(value)}")
    return "; ".join(parts)


def table(results: list[dict[str, Any]]) -> str:
    """One row per contender, grouped by benchmark."""
    lines = [
        "| benchmark | target | verdict | contender | result | key figures |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        first = True
        contenders = r["contenders"] or {"–": {}}
        for name, stats in contenders.items():
            label = name if "label" not in stats else f"{name} ({stats['label']})"
            if first:
                head = f"| {r['title']} | {r['target']} | **{r['verdict']}** |"
                tail = _metrics(r["metrics"]) or r["note"]
            else:
                head, tail = "| | | |", ""
            body = _cell(stats, r["unit"]) if stats else r["note"]
            lines.append(f"{head} {label} | {body} | {tail} |")
            first = False
    return "\n".join(lines)


def markdown(run: dict[str, Any], interpretation: str) -> str:
    """The block that goes between the README markers."""
    return "\n".join(
        [
            BEGIN,
            f"Run: {run['date']} · mode `{run['mode']}` · {run['total_seconds']:.0f} s total  ",
            f"Machine: {one_line(run['machine'])}  ",
            f"shellgate: {run['machine'].get('shellgate', '?')} · peers: {run['machine']['codex']}; "
            f"swe-rex {run['machine']['swe_rex']}  ",
            f"Reproduce: `{run['command']}`",
            "",
            table(run["results"]),
            "",
            interpretation.strip(),
            END,
        ]
    )


def write(run: dict[str, Any], json_path: Path, readme: Path | None, interpretation: str) -> None:
    """Write the JSON, and splice the Markdown between the README markers."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(run, indent=2, default=str) + "\n")
    if readme is None:
        return
    block = markdown(run, interpretation)
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    readme.write_text(text)


def write_compare(run: dict[str, Any], json_path: Path, readme: Path | None) -> None:
    """`--compare`: the JSON, and its table between the README's compare markers."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(run, indent=2, default=str) + "\n")
    if readme is None:
        return
    block = "\n".join((
        COMPARE_BEGIN,
        f"Run: {run['date']} · mode `{run['mode']}` · {run['total_seconds']} s  ",
        f"Machine: {one_line(run['machine'])}  ",
        f"Reproduce: `{run['command']}`",
        "",
        table(run["results"]),
        COMPARE_END,
    ))  # fmt: skip
    text = readme.read_text()
    if COMPARE_BEGIN in text and COMPARE_END in text:
        before, rest = text.split(COMPARE_BEGIN, 1)
        text = before + block + rest.split(COMPARE_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Two commits side by side (`--compare`)\n\n" + block + "\n"
    readme.write_text(text)
