"""Conformance functions for `shellgate eval` (area: output, unified exec, environment)."""

from __future__ import annotations

from typing import Any

from shellgate.common import env_policy as envp
from shellgate.router.cli.conformance import EvalFailure, EvalFn
from shellgate.router.output import decoding
from shellgate.router.output import texts as output_format
from shellgate.router.output import truncation as output
from shellgate.router.output import unified_rules as unified
from shellgate.router.output.truncation import TruncationPolicy


def _policy(value: Any) -> TruncationPolicy:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, limit),) = value.items()
        if kind == "tokens":
            return TruncationPolicy.tokens(int(limit))
        if kind == "bytes":
            return TruncationPolicy.bytes(int(limit))
    raise EvalFailure(f"bad truncation policy: {value!r}")


def _policy_json(policy: TruncationPolicy) -> dict[str, int]:
    return {str(policy.unit): policy.limit}


def _env_policy(value: Any) -> envp.ShellEnvironmentPolicy:
    return envp.ShellEnvironmentPolicy.build(
        inherit=value.get("inherit", "all"),
        ignore_default_excludes=bool(value.get("ignore_default_excludes", False)),
        exclude=value.get("exclude") or (),
        set_vars=value.get("set") or {},
        include_only=value.get("include_only") or (),
    )


def _env_policy_json(policy: envp.ShellEnvironmentPolicy) -> dict[str, Any]:
    return {
        "inherit": str(policy.inherit),
        "ignore_default_excludes": policy.ignore_default_excludes,
        "exclude": list(policy.exclude),
        "set": policy.set_vars,
        "include_only": list(policy.include_only),
    }


def _text_policy(inp: Any, fn: Any) -> Any:
    return fn(inp["text"], _policy(inp["policy"]))


def _freeform(inp: Any) -> str:
    return output_format.format_exec_output_freeform(
        exit_code=int(inp["exit_code"]),
        duration_ms=inp["duration_ms"],
        aggregated_output=inp["aggregated_output"],
        timed_out=bool(inp["timed_out"]),
        policy=_policy(inp["truncation_policy"]),
    )


def _unified_response(inp: Any) -> str:
    policy = unified.unified_max_output_tokens(
        inp.get("max_output_tokens"), TruncationPolicy.tokens(int(inp["policy_token_budget"]))
    )
    return output_format.unified_response_text(
        chunk_id=inp.get("chunk_id") or "",
        wall_time_ms=inp["wall_time_ms"],
        exit_code=inp.get("exit_code"),
        session_id=inp.get("session_id"),
        original_token_count=inp.get("original_token_count"),
        output=inp["raw_output"],
        policy=policy,
    )


def _max_output_tokens(inp: Any) -> dict[str, int]:
    policy = unified.unified_max_output_tokens(
        inp.get("max_output_tokens"), _policy(inp["truncation_policy"])
    )
    return _policy_json(policy)


def _clamp_exec(inp: Any) -> int:
    windows = str(inp.get("platform") or "linux").lower().startswith("win")
    return unified.clamp_exec_yield_time_ms(inp.get("yield_time_ms"), windows=windows)


def _clamp_write(inp: Any) -> int:
    return unified.clamp_write_stdin_yield_time_ms(
        inp.get("chars") or "",
        inp.get("yield_time_ms"),
        inp.get("background_terminal_max_timeout_ms"),
    )


def _allocate(inp: Any) -> int:
    import random  # randomness stays at the adapter edge

    return unified.allocate_process_id(
        [int(x) for x in inp.get("reserved") or []],
        deterministic=bool(inp.get("deterministic", False)),
        randint=random.randrange,
    )


def _prune(inp: Any) -> int | None:
    return unified.process_id_to_prune(
        [unified.ProcessUsage(int(p["id"]), float(p["last_used"]), bool(p["exited"])) for p in inp]
    )


def _create_env(inp: Any) -> dict[str, str]:
    return envp.create_env(
        inp.get("vars") or {},
        _env_policy(inp.get("policy") or {}),
        inp.get("thread_id"),
        inp.get("platform") or "unix",
    )


def _child_env(inp: Any) -> dict[str, str]:
    raw = inp.get("env_policy")
    return envp.exec_server_child_env(
        inp.get("server_env") or {},
        None if raw is None else _env_policy(raw),
        inp.get("env") or {},
        inp.get("platform") or "unix",
    )


def _overlay(inp: Any) -> dict[str, str]:
    return envp.exec_server_env_overlay(
        inp.get("policy_env") or {},
        inp.get("request_env") or {},
        shell_snapshot=bool(inp.get("shell_snapshot", False)),
        policy_sets_path=bool(inp.get("policy_sets_path", False)),
    )


FUNCTIONS: dict[str, EvalFn] = {
    "approx_token_count": lambda s: output.approx_token_count(s),
    "count_lines": lambda s: output.count_lines(s),
    "truncate_text": lambda inp: _text_policy(inp, output.truncate_text),
    "formatted_truncate_text": lambda inp: _text_policy(inp, output.formatted_truncate_text),
    "bytes_to_string_smart": lambda h: decoding.bytes_to_string_smart(bytes.fromhex(h)),
    "classic_duration_seconds": lambda ms: output_format.classic_duration_seconds(ms),
    "format_exec_output_freeform": _freeform,
    "format_batch_output": lambda inp: output_format.format_batch_output(
        inp.get("blocks") or [], inp.get("not_run") or []
    ),
    "unified_response_text": _unified_response,
    "unified_max_output_tokens": _max_output_tokens,
    "clamp_exec_yield_time_ms": _clamp_exec,
    "clamp_write_stdin_yield_time_ms": _clamp_write,
    "abort_message": lambda inp: output_format.abort_message(inp["tool_name"], inp["elapsed_ms"]),
    "allocate_process_id": _allocate,
    "process_id_to_prune": _prune,
    "create_env": _create_env,
    "inject_permission_profile_env": lambda inp: envp.inject_permission_profile_env(
        inp.get("env") or {}, inp.get("active_profile"), inp.get("platform") or "unix"
    ),
    "apply_unified_exec_env": lambda env: envp.apply_unified_exec_env(env or {}),
    "exec_server_child_env": _child_env,
    "exec_server_env_overlay": _overlay,
    "exec_server_env_policy": lambda p: _env_policy_json(
        envp.exec_server_env_policy(_env_policy(p))
    ),
}
