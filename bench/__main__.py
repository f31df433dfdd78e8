"""`python -m bench`: every benchmark side by side with its anchor, in one bounded run.

Options: `--only NAME[,NAME]` (repeatable), `--quick` (smaller sizes, shorter bounds),
`--smoke` (a few iterations of everything, for the test suite), `--output PATH` (JSON),
`--no-readme`, `--no-install` (do not pip-install SWE-ReX when it is absent), `--compare REF`
(this checkout and commit REF side by side: bench/compare.py).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from shellgate.common.process_tuning import tune_malloc

from bench.compare import compare
from bench.core import FULL, QUICK, SMOKE, Mode, Result
from bench.interpret import interpretation
from bench.machine import describe
from bench.peers import Peers, codex_binary
from bench.procs import scratch_home
from bench.report import write, write_compare
from bench.suites.codex_benches import CODEX_BENCHES
from bench.suites.exec_benches import EXEC_BENCHES
from bench.suites.memory_benches import MEMORY_BENCHES
from bench.suites.router_benches import ROUTER_BENCHES
from bench.suites.stream_benches import STREAM_BENCHES

HERE = Path(__file__).resolve().parent
BENCHES: dict[str, Any] = {
    **EXEC_BENCHES, **CODEX_BENCHES, **ROUTER_BENCHES, **MEMORY_BENCHES, **STREAM_BENCHES
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument(
        "--only",
        action="append",
        default=[],
        help=f"run only these ({', '.join(BENCHES)}); comma-separated or repeated",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes, shorter bounds")
    size.add_argument("--smoke", action="store_true", help="a few iterations, tiny sizes")
    p.add_argument(
        "--output",
        type=Path,
        help="JSON path (default bench/results/latest.json; smoke: bench/results/smoke.json)",
    )
    p.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    p.add_argument("--no-install", action="store_true", help="never pip-install SWE-ReX")
    p.add_argument(
        "--compare",
        metavar="REF",
        help="run this checkout and commit REF side by side instead (bench/compare.py); "
        "writes bench/results/compare.json and the README's compare table",
    )
    return p


def _ensure_swerex(mode: Mode, allowed: bool) -> str:
    if importlib.util.find_spec("swerex") is not None:
        return "present"
    if mode is SMOKE or not allowed:
        return "absent (SWE-ReX rows skipped)"
    # The comparison needs SWE-ReX's server; install it from the package index when absent.
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "swe-rex"], check=False)
    importlib.invalidate_caches()
    return "installed by the bench" if done.returncode == 0 else "install failed"


async def _run_all(names: list[str], mode: Mode) -> list[Result]:
    results: list[Result] = []
    with scratch_home() as home:
        peers = Peers(home)
        try:
            for name in names:
                t0 = time.perf_counter()
                print(f"[bench] {name} …", file=sys.stderr, flush=True)
                try:
                    result: Result = await BENCHES[name](peers, mode)
                except Exception as exc:  # a broken peer must not hide the other rows
                    traceback.print_exc()
                    result = Result(
                        name,
                        name,
                        "",
                        verdict="error",
                        note=f"{type(exc).__name__}: {str(exc)[:300]}",
                    )
                result.seconds = round(time.perf_counter() - t0, 2)
                print(
                    f"[bench] {name}: {result.verdict} ({result.seconds} s)",
                    file=sys.stderr,
                    flush=True,
                )
                results.append(result)
        finally:
            await peers.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    """Run, write JSON (and the README table unless told not to); exit 0 unless a bench broke."""
    args = _parser().parse_args(argv)
    mode = SMOKE if args.smoke else QUICK if args.quick else FULL
    names = [n for chunk in args.only for n in chunk.split(",") if n] or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"unknown bench {unknown}; known: {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    if args.compare:
        return _compare(args.compare, mode, args)
    swerex = _ensure_swerex(mode, not args.no_install)
    # The clients of every peer run in this process; the daemon's malloc thresholds keep
    # their large message buffers from re-faulting the heap top on every message too.
    tune_malloc()
    t0 = time.perf_counter()
    results = asyncio.run(_run_all(names, mode))
    command = "python -m bench" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))
    rows = [r.as_dict() for r in results]
    run: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": mode.name,
        "mode_settings": vars(mode),
        "command": command,
        "machine": describe(codex_binary()),
        "swe_rex": swerex,
        "total_seconds": round(time.perf_counter() - t0, 1),
        "results": rows,
    }
    default = HERE / "results" / ("smoke.json" if mode is SMOKE else "latest.json")
    readme = None if args.no_readme or mode is SMOKE else HERE / "README.md"
    write(run, args.output or default, readme, interpretation(rows))
    for r in results:
        print(f"{r.name:20s} {r.verdict:8s} {r.seconds:7.1f} s  {r.note[:80]}")
    return 1 if any(r.verdict == "error" for r in results) else 0


def _compare(ref: str, mode: Mode, args: argparse.Namespace) -> int:
    tune_malloc()
    t0 = time.perf_counter()
    result = asyncio.run(compare(ref, mode))
    result.seconds = round(time.perf_counter() - t0, 2)
    run: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": mode.name,
        "command": f"python -m bench --compare {shlex.quote(ref)}"
        + (f" --{mode.name}" if mode.name != "full" else ""),
        "machine": describe(codex_binary()),
        "total_seconds": result.seconds,
        "results": [result.as_dict()],
    }
    readme = None if args.no_readme or mode is SMOKE else HERE / "README.md"
    write_compare(run, args.output or HERE / "results" / "compare.json", readme)
    print(f"{result.name:20s} {result.verdict:8s} {result.seconds:7.1f} s  {result.metrics}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
