"""Conformance functions for `shellgate eval` (area: decode, handler command)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from shellgate.router.cli.conformance import EvalFn
from shellgate.router.decode import tool_call as decode
from shellgate.router.decode import tools, workdir
from shellgate.router.decode.params import AdditionalPermissions
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tool_schemas import SchemaSwitches
from shellgate.router.handler import environments, shells
from shellgate.router.handler import plan as handler


def _tool_call(item: Any) -> Any:
    if not isinstance(item, dict):
        return None
    out = decode.build_tool_call(item)
    if isinstance(out, decode.NoToolCall):
        return None
    if isinstance(out, decode.ToolError):
        return {"error": out.text}
    payload: dict[str, Any] = {"type": out.kind.value}
    if out.kind is decode.PayloadKind.FUNCTION:
        payload["arguments"] = out.arguments
    elif out.kind is decode.PayloadKind.CUSTOM:
        payload["input"] = out.input
    else:
        payload["arguments"] = {"query": out.query, "limit": out.limit}
    return {
        "tool_name": {"namespace": out.tool_name.namespace, "name": out.tool_name.name},
        "call_id": out.call_id,
        "payload": payload,
    }


def _dispatch_error(data: dict[str, Any]) -> Any:
    return decode.dispatch_error(
        data["tool_name"], decode.PayloadKind(data["payload"]), set(data.get("registered") or [])
    )


def _shell_type(data: dict[str, Any]) -> Any:
    shell_type, mode = tools.shell_type_for_model_and_features(
        tools.ConfigShellToolType(data["model_shell_type"]),
        tools.Features.only(data.get("features") or []),
        bool(data.get("conpty_supported", True)),
    )
    return {"shell_type": shell_type.value, "unified_exec_feature_mode": mode.value}


def _register(data: dict[str, Any]) -> Any:
    envs = [tools.EnvironmentRef(e["id"], bool(e.get("remote"))) for e in data["environments"]]
    reg = tools.register_shell_tools(
        tools.ShellToolType(data["shell_type"]),
        envs,
        tools.UnifiedExecShellMode(data.get("unified_exec_shell_mode", "direct")),
    )
    return {
        "model_visible": list(reg.model_visible),
        "hidden": list(reg.hidden),
        "exec_command_has_shell": reg.exec_command_has_shell,
        "exec_command_has_environment_id": reg.exec_command_has_environment_id,
    }


def _schema(data: dict[str, Any]) -> Any:
    sw = SchemaSwitches(
        allow_login_shell=bool(data.get("allow_login_shell", True)),
        exec_permission_approvals=bool(data.get("exec_permission_approvals", False)),
        include_shell_parameter=bool(data.get("include_shell_parameter", True)),
        include_environment_id=bool(data.get("include_environment_id", False)),
        unified_exec_tty=bool(data.get("unified_exec_tty", True)),
    )
    builders = {
        "shell_command": tools.shell_command_tool,
        "exec_command": tools.exec_command_tool,
        "write_stdin": tools.write_stdin_tool,
    }
    params = builders[data["tool"]](sw)["parameters"]
    out: dict[str, Any] = {
        "properties": sorted(params["properties"]),
        "required": params["required"],
    }
    sandbox = params["properties"].get("sandbox_permissions")
    if sandbox is not None:
        out["sandbox_permissions_enum"] = sandbox["enum"]
    return out


def _permissions_json(value: AdditionalPermissions | None) -> Any:
    if value is None:
        return None
    out: dict[str, Any] = {}
    if value.has_network:
        out["network"] = {"enabled": value.network_enabled}
    fs = value.file_system
    if fs is not None:
        if fs.entries is not None:
            out["file_system"] = {
                "entries": [asdict(e) for e in fs.entries],
                "glob_scan_max_depth": fs.glob_scan_max_depth,
            }
        else:
            out["file_system"] = {
                "read": list(fs.read) if fs.read is not None else None,
                "write": list(fs.write) if fs.write is not None else None,
            }
    return out


def _params_json(params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in params.__dataclass_fields__:
        value = getattr(params, name)
        if isinstance(value, AdditionalPermissions):
            value = _permissions_json(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, SandboxPermissions):
            value = value.value
        out[name] = value
    return out


def _decoded(result: Any) -> Any:
    if isinstance(result, decode.ToolError):
        return {"error": result.text}
    return {"params": _params_json(result.params), "warnings": list(result.warnings)}


def _sandbox(data: dict[str, Any]) -> Any:
    given = data.get("sandbox_permissions")
    out = decode.resolve_sandbox_permissions(
        data.get("tool", "exec_command"),
        SandboxPermissions(given) if given is not None else None,
        data.get("justification"),
    )
    if isinstance(out, decode.ToolError):
        return {"error": out.text}
    return {"sandbox_permissions": out.value}


def _login(data: dict[str, Any]) -> Any:
    # `allow_login_shell` absent or null = not configured = the default `true` (spec 01 §3).
    allow = data.get("allow_login_shell")
    out = handler.resolve_login(data.get("login"), True if allow is None else bool(allow))
    return {"error": out.text} if isinstance(out, decode.ToolError) else {"use_login": out}


def _derive(data: dict[str, Any]) -> Any:
    kind = shells.ShellType(data["shell_type"])
    return shells.derive_exec_args(kind, data["shell_path"], data["command"], bool(data["login"]))


def _environment(data: dict[str, Any]) -> Any:
    raw = data.get("environments") or []
    ordered = sorted(raw, key=lambda e: not e.get("primary", False))
    envs = [environments.TurnEnvironment(e["id"], e.get("cwd", "/")) for e in ordered]
    out = environments.select_environment(data["tool"], envs, data.get("environment_id"))
    if isinstance(out, decode.ToolError):
        return {"error": out.text}
    return {"environment_id": out.id}


def _derived(out: environments.DerivedCommand | decode.ToolError) -> Any:
    if isinstance(out, decode.ToolError):
        return {"error": out.text}
    return {"argv": list(out.argv), "shell_type": out.shell.type.value}


def _remote(data: dict[str, Any]) -> Any:
    reported = data.get("reported_shell")
    shell = environments.ReportedShell(reported["name"], reported["path"]) if reported else None
    return _derived(
        environments.remote_command(
            data["environment_id"], shell, data.get("requested_shell"), data["cmd"],
            bool(data.get("login", True)),
        )
    )  # fmt: skip


def _zsh_fork(data: dict[str, Any]) -> Any:
    return _derived(
        environments.zsh_fork_command(
            data["shell_zsh_path"], data.get("requested_shell"), data["cmd"],
            bool(data.get("login", True)),
        )
    )  # fmt: skip


def _mode(data: dict[str, Any]) -> Any:
    mode = environments.shell_mode_for_environment(
        tools.UnifiedExecShellMode(data["turn_mode"]), bool(data.get("remote"))
    )
    return mode.value


def _detect(value: Any) -> Any:
    found = shells.detect_shell_type(value) if isinstance(value, str) else None
    return found.value if found is not None else None


FUNCTIONS: dict[str, EvalFn] = {
    "build_tool_call": _tool_call,
    "dispatch_error": _dispatch_error,
    "shell_type_for_model_and_features": _shell_type,
    "register_shell_tools": _register,
    "tool_schema_properties": _schema,
    "decode_shell_command_args": lambda s: _decoded(
        decode.decode_shell_command(decode.Arguments(s))
    ),
    "decode_exec_command_args": lambda s: _decoded(
        decode.decode_exec_command_args(decode.Arguments(s))
    ),
    "decode_write_stdin_args": lambda s: _decoded(decode.decode_write_stdin(decode.Arguments(s))),
    "resolve_sandbox_permissions": _sandbox,
    "resolve_login": _login,
    "derive_exec_args": _derive,
    "resolve_workdir": lambda d: workdir.resolve_workdir(d["base_cwd"], d.get("workdir")),
    "resolve_tool_environment": _environment,
    "remote_requested_shell": _remote,
    "zsh_fork_get_command": _zsh_fork,
    "shell_mode_for_environment": _mode,
    "detect_shell_type": _detect,
}
