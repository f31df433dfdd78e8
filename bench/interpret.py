"""One plain sentence per benchmark, generated from its numbers (what the table means)."""

from __future__ import annotations

import math
from typing import Any


def _g(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _p50(r: dict[str, Any], who: str) -> str:
    return _g(r["contenders"].get(who, {}).get("p50"))


def _same_protocol(r: dict[str, Any], unit: str) -> str:
    """The apples-to-apples pair: both daemons behind Codex's protocol, one client."""
    if "shellgate_codex" not in r["contenders"]:
        return ""
    return (
        f" Same protocol and client: shellgate-execserver {_p50(r, 'shellgate_codex')} {unit} "
        f"vs codex exec-server {_p50(r, 'codex')} {unit} "
        f"({_g(r['metrics'].get('same_protocol_speedup_vs_codex_p50'))}×)."
    )


def _floor(r: dict[str, Any]) -> str:
    """The grpc-aio floor (bench/floor_server.py) against the row's anchors, where it ran."""
    if "grpc_floor" not in r["contenders"]:
        return ""
    m = r["metrics"]
    if r["name"] == "first_byte":
        against = (f"raw + {_g(m.get('floor_minus_raw_ms_p50'))} ms; router − floor "
                   f"{_g(m.get('router_minus_floor_ms_p50'))} ms")  # fmt: skip
    elif "shellgate_vs_floor_rate_p50" in m:
        # A rate (MiB/s): the floor's against the peer's, shellgate's against the floor's.
        peer = "Codex" if r["name"] == "throughput" else "SWE-ReX"
        speedup = m.get("floor_speedup_vs_codex_p50", m.get("floor_speedup_vs_swerex_p50"))
        against = (f"{_g(speedup)}× {peer}; shellgate "
                   f"{_g(m['shellgate_vs_floor_rate_p50'])}× the floor's rate")  # fmt: skip
    else:
        parts = [f"{_g(m.get('floor_vs_raw_p50'))}× raw"]
        if "floor_vs_swerex_p50" in m:
            parts.insert(0, f"{_g(m['floor_vs_swerex_p50'])}× SWE-ReX")
        if "floor_speedup_vs_codex_p50" in m:
            parts.append(f"{_g(m['floor_speedup_vs_codex_p50'])}× faster than Codex")
        parts.append(f"shellgate {_g(m.get('shellgate_vs_floor_p50'))}× the floor")
        against = "; ".join(parts)
    return f" grpc-aio floor {_p50(r, 'grpc_floor')} {r['unit']} ({against})."


def _sentence(r: dict[str, Any]) -> str:
    text = _sentence_of(r)
    if r["verdict"] in ("skipped", "error"):
        return text
    text += _floor(r)
    unit = {"spawn": "ms", "throughput": "MiB/s", "concurrency": "s"}.get(r["name"])
    if unit is None:
        return text
    return text + _same_protocol(r, unit)


def _sentence_of(r: dict[str, Any]) -> str:
    m, name, v = r["metrics"], r["name"], r["verdict"]
    if v in ("skipped", "error"):
        return f"{r['title']}: {v} — {r['note']}"
    if name == "spawn":
        return (
            f"spawn: shellgate {_p50(r, 'shellgate')} ms vs Codex {_p50(r, 'codex')} ms "
            f"({_g(m.get('speedup_vs_codex_p50'))}× faster; target 20×) and raw "
            f"{_p50(r, 'raw')} ms ({_g(m.get('slowdown_vs_raw_p50'))}× raw; target ≤ 1.3×)."
        )
    if name == "throughput":
        lossless = m.get("shellgate_lossless")
        return (
            f"throughput: shellgate delivers {_p50(r, 'shellgate')} MiB/s vs Codex "
            f"{_p50(r, 'codex')} MiB/s ({_g(m.get('speedup_vs_codex_p50'))}×; target 4×)"
            + ("" if lossless else ", and it LOSES output under load (evicted gaps)")
            + f"; the pipe itself moves {_p50(r, 'pipe')} MiB/s."
        )
    if name == "concurrency":
        return (
            f"concurrency: shellgate {_p50(r, 'shellgate')} s, Codex {_p50(r, 'codex')} s, "
            f"raw asyncio {_p50(r, 'raw')} s ({_g(m.get('slowdown_vs_raw_p50'))}× raw; "
            "target ≤ 1.1×)."
        )
    if name == "project":
        return (
            f"Project: {_p50(r, 'shellgate')} ms vs the empty RPC {_p50(r, 'empty_rpc')} ms "
            f"({_g(m.get('p50_vs_empty_rpc'))}×; target 1.3×) and the in-process core "
            f"{_p50(r, 'core')} ms; {_g(m.get('project_req_per_s'))} req/s (target 2 500); "
            f"new requests every time {_p50(r, 'shellgate_cold')} ms "
            f"({_g(m.get('cold_vs_empty_rpc'))}×), {_g(m.get('cold_req_per_s'))} req/s; the "
            f"empty RPC alone {_g(m.get('empty_rpc_req_per_s'))} req/s."
        )
    if name == "execute":
        return (
            f"Execute: ExecuteOnce {_p50(r, 'shellgate_once')} ms vs SWE-ReX "
            f"{_p50(r, 'swerex')} ms ({_g(m.get('vs_swerex_p50'))}×; target ≤ 0.75×) and raw "
            f"{_p50(r, 'raw')} ms ({_g(m.get('vs_raw_p50'))}×; target ≤ 1.5×); the v1 stream "
            f"{_p50(r, 'shellgate')} ms ({_g(m.get('stream_vs_swerex_p50'))}×), coalesced "
            f"{_p50(r, 'shellgate_coalesced')} ms ({_g(m.get('coalesced_vs_swerex_p50'))}×); "
            f"through a remote environment ExecuteOnce {_p50(r, 'shellgate_remote_once')} ms "
            f"({_g(m.get('remote_vs_swerex_p50'))}× SWE-ReX; target ≤ 1.0×), stream "
            f"{_p50(r, 'shellgate_remote')} ms; ExecService alone {_p50(r, 'execservice')} ms."
        )
    if name == "execute_concurrent":
        return (
            f"concurrent Execute: {_p50(r, 'shellgate')} s "
            f"({_g(m.get('slowdown_vs_raw_p50'))}× raw asyncio; target ≤ 1.1×), ExecuteOnce "
            f"{_p50(r, 'shellgate_once')} s ({_g(m.get('once_slowdown_vs_raw_p50'))}×) vs SWE-ReX "
            f"{_p50(r, 'swerex')} s (SWE-ReX runs subprocess.run inside its async handler, "
            f"so it serialises) and raw asyncio {_p50(r, 'raw')} s."
        )
    if name == "execute_bytes":
        return (
            f"bytes end to end: router {_p50(r, 'shellgate')} MiB/s vs SWE-ReX "
            f"{_p50(r, 'swerex')} MiB/s ({_g(m.get('speedup_vs_swerex_p50'))}×; target 8×), "
            f"router RSS +{_g(m.get('router_rss_growth_mib'))} MiB."
        )
    if name == "slow_consumer":
        return (
            f"slow consumer: daemon RSS +{_g(m.get('rss_growth_mib'))} MiB "
            f"({_g(m.get('gap_events'))} gap events; target ≤ 32 MiB)."
        )
    if name == "idle_pty":
        return (
            f"idle PTYs: {_g(m.get('kib_per_session'))} KiB per session "
            f"({_g(m.get('sessions'))} sessions; target ≤ 200 KiB)."
        )
    if name == "first_byte":
        return (
            f"time to first byte: router {_p50(r, 'shellgate')} ms, ExecService "
            f"{_p50(r, 'execservice')} ms, raw {_p50(r, 'raw')} ms (router − raw "
            f"{_g(m.get('router_minus_raw_ms_p50'))} ms; target ≤ 5 ms)."
        )
    if name == "idle_sessions":
        return (
            f"idle unified sessions: {_p50(r, 'shellgate')} KiB per session (router "
            f"{_g(m.get('router_kib_per_session'))} + daemon {_g(m.get('daemon_kib_per_session'))};"
            f" {_g(m.get('sessions_started'))} of {_g(m.get('sessions'))} started; target ≤ 300 KiB)."
        )
    if name == "codex_spawn":
        return (
            f"Codex's protocol, spawn: shellgate's listener {_p50(r, 'shellgate_codex')} ms vs "
            f"codex exec-server {_p50(r, 'codex')} ms "
            f"({_g(m.get('speedup_vs_codex_p50'))}× faster; target 20×)."
        )
    if name == "codex_throughput":
        return (
            f"Codex's protocol, throughput: shellgate's listener "
            f"{_p50(r, 'shellgate_codex')} MiB/s vs codex exec-server {_p50(r, 'codex')} MiB/s "
            f"({_g(m.get('speedup_vs_codex_p50'))}×; target 4×)."
        )
    if name == "project_under_load":
        return (
            f"Project under load: p99 {_g(m.get('loaded_p99_ms'))} ms vs "
            f"{_g(m.get('idle_p99_ms'))} ms idle ({_g(m.get('p99_vs_idle'))}×; target ≤ 5×), "
            f"{_g(m.get('load_executes_completed'))} load Executes completed meanwhile."
        )
    return f"{r['title']}: {v}."


def interpretation(results: list[dict[str, Any]]) -> str:
    """A bullet list: verdict counts, then one sentence per benchmark."""
    verdicts = [r["verdict"] for r in results]
    head = (
        f"**{verdicts.count('met')} met, {verdicts.count('missed')} missed, "
        f"{verdicts.count('skipped') + verdicts.count('error')} not run.**"
    )
    return "\n".join([head, "", *(f"- {_sentence(r)}" for r in results)])
