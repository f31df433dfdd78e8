"""Describe this machine for the report: CPU model, cores, memory, kernel, versions."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _mem_total_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def _nproc() -> int:
    try:
        out = subprocess.run(["nproc"], capture_output=True, text=True, timeout=5, check=True)
        return int(out.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return len(os.sched_getaffinity(0))


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unavailable"


def git_state(repo: Path) -> str:
    """`<short sha>` plus ` (+ uncommitted changes)` when the work tree is dirty."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=repo,
            text=True,
            capture_output=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + (" (+ uncommitted changes)" if dirty.strip() else "")


def describe(codex: str | None) -> dict[str, Any]:
    """Machine facts and peer versions."""
    try:
        from importlib.metadata import version

        swerex = version("swe-rex")
    except Exception:
        swerex = "not installed"
    return {
        "cpu": _cpu_model(),
        "nproc": _nproc(),
        "memory_gib": round(_mem_total_gib(), 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "codex": _version([codex, "--version"]) if codex else "not found",
        "swe_rex": swerex,
        "shellgate": git_state(Path(__file__).resolve().parent.parent),
    }


def one_line(m: dict[str, Any]) -> str:
    """`AMD EPYC, 2 CPUs (nproc), 23.5 GiB RAM, Linux 5.x, Python 3.11.7`."""
    return (
        f"{m['cpu']}, {m['nproc']} CPUs (nproc), {m['memory_gib']} GiB RAM, "
        f"Linux {m['kernel']}, Python {m['python']}"
    )
