"""`ProjectedCall` (domain) → `shellgate.v1.Projection` (wire)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format
from shellgate.common.enum_maps import SHELL_TYPES
from shellgate.router.apply_patch import (
    AddFile,
    ApplyPatchAction,
    CorrectnessError,
    DeleteFile,
    Hunk,
    UpdateFile,
)
from shellgate.router.approval_identity import ApprovalKey, canonical_json
from shellgate.router.display.types import ListFiles, ParsedCommand, Read, Search
from shellgate.router.envelope import ExecutionEnvelope, Permissions
from shellgate.router.output.truncation import TruncationPolicy, TruncationUnit
from shellgate.router.policy import (
    Forbidden,
    HeuristicsRuleMatch,
    NeedsApproval,
    RuleMatch,
    Skip,
)
from shellgate.router.policy.requirement import ExecApprovalRequirement
from shellgate.router.policy_projection import CommandOrigin
from shellgate.router.projection import (
    ApplyPatchToolCall,
    CommandElement,
    NoToolCallOutcome,
    PatchElement,
    ProjectedCall,
    ShellCall,
    ShellElement,
    ToolErrorOutcome,
    WriteStdinCall,
)
from shellgate.v1 import common_pb2, projection_pb2, shell_pb2

_SHELL_MODES = {"direct": shell_pb2.SHELL_MODE_DIRECT, "zsh_fork": shell_pb2.SHELL_MODE_ZSH_FORK}
_PAYLOADS = {"function": projection_pb2.PAYLOAD_KIND_FUNCTION,
             "custom": projection_pb2.PAYLOAD_KIND_CUSTOM,
             "tool_search": projection_pb2.PAYLOAD_KIND_TOOL_SEARCH}  # fmt: skip
_DECISIONS = {"allow": projection_pb2.POLICY_DECISION_ALLOW,
              "prompt": projection_pb2.POLICY_DECISION_PROMPT,
              "forbidden": projection_pb2.POLICY_DECISION_FORBIDDEN}  # fmt: skip
_SANDBOX = {"use_default": common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
            "require_escalated": common_pb2.SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
            "with_additional_permissions":
                common_pb2.SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS}  # fmt: skip
_ACCESS = {"read": common_pb2.FILE_SYSTEM_ACCESS_READ, "write": common_pb2.FILE_SYSTEM_ACCESS_WRITE,
           "none": common_pb2.FILE_SYSTEM_ACCESS_NONE}  # fmt: skip
_NAMESPACES = {"shell": projection_pb2.APPROVAL_NAMESPACE_SHELL,
               "unified_exec": projection_pb2.APPROVAL_NAMESPACE_UNIFIED_EXEC}  # fmt: skip


# Sub-messages that repeat across calls (the environment map, permission records) are built
# once and copied in: a copy is a single C call, building them is one Python call per field.
# The caches are keyed by the domain value (or, for the environment, its memoised tuple).
PB_CACHE_SIZE = 64
_PERMISSIONS_PB: dict[Permissions | tuple[str, str | None], projection_pb2.CommandPermissions] = {}
_ENV_PB: dict[tuple[tuple[str, str], ...], projection_pb2.ExecutionEnvelope] = {}
# The last environment seen, by identity: the envelope stage returns one memoised tuple for
# the same parent environment and policy, so the usual case skips hashing ~40 pairs.
_last_env: list[tuple[tuple[tuple[str, str], ...], projection_pb2.ExecutionEnvelope]] = []


def _bounded_put(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= PB_CACHE_SIZE:
        cache.clear()
    cache[key] = value


def _fill_truncation(out: common_pb2.TruncationPolicy, policy: TruncationPolicy) -> None:
    if policy.unit is TruncationUnit.TOKENS:
        out.tokens = policy.limit
    else:
        out.bytes = policy.limit


def _fill_words(
    out: projection_pb2.CommandWords, words: Iterable[str], span: tuple[int, int] | None
) -> None:
    out.words.extend(words)
    if span is not None:
        s = out.span
        s.start, s.end = span


def _fill_additional(out: common_pb2.AdditionalPermissions, profile: dict[str, Any]) -> None:
    out.SetInParent()
    network = profile.get("network")
    if isinstance(network, dict) and isinstance(network.get("enabled"), bool):
        out.network.enabled = network["enabled"]
    for entry in profile.get("file_system") or ():
        out.file_system.entries.add(
            path=entry["path"],
            access=_ACCESS.get(entry["access"], common_pb2.FILE_SYSTEM_ACCESS_UNSPECIFIED),
        )
    depth = profile.get("glob_scan_max_depth")
    if isinstance(depth, int):
        out.file_system.glob_scan_max_depth = depth


def _permissions(sandbox: str, profile: object) -> projection_pb2.CommandPermissions:
    out = projection_pb2.CommandPermissions(
        sandbox_permissions=_SANDBOX.get(sandbox, common_pb2.SANDBOX_PERMISSIONS_UNSPECIFIED)
    )
    if isinstance(profile, dict):
        _fill_additional(out.additional_permissions, profile)
    return out


def _fill_permissions(
    out: projection_pb2.CommandPermissions,
    cache_key: Permissions | tuple[str, str | None],
    sandbox: str,
    profile: object,
) -> None:
    # Built once per distinct value (bounded), then copied: cheaper than field by field.
    cached = _PERMISSIONS_PB.get(cache_key)
    if cached is None:
        cached = _permissions(sandbox, profile)
        _bounded_put(_PERMISSIONS_PB, cache_key, cached)
    out.CopyFrom(cached)


def _fill_perm(out: projection_pb2.CommandPermissions, p: Permissions) -> None:
    _fill_permissions(out, p, p.sandbox_permissions, p.additional_permissions)


def _fill_key_permissions(out: projection_pb2.CommandPermissions, key: ApprovalKey) -> None:
    cache_key = (key.sandbox_permissions, key.additional_permissions_json)
    _fill_permissions(out, cache_key, key.sandbox_permissions, key.additional_permissions)


def _fill_rule_match(out: projection_pb2.RuleMatch, match: RuleMatch) -> None:
    if isinstance(match, HeuristicsRuleMatch):
        h = out.heuristics_rule_match
        h.command.extend(match.command)
        h.decision = _DECISIONS[match.decision.value]
        return
    prefix = out.prefix_rule_match
    prefix.matched_prefix.extend(match.matched_prefix)
    prefix.decision = _DECISIONS[match.decision.value]
    if match.resolved_program is not None:
        prefix.resolved_program = match.resolved_program
    if match.justification is not None:
        prefix.justification = match.justification


def _fill_requirement(
    out: projection_pb2.ApprovalRequirement, req: ExecApprovalRequirement
) -> None:
    if isinstance(req, Forbidden):
        out.forbidden.reason = req.reason
        return
    amendment = req.proposed_execpolicy_amendment
    if isinstance(req, Skip):
        skip = out.skip
        skip.bypass_sandbox = req.bypass_sandbox
        if amendment is not None:
            skip.proposed_amendment.prefix.extend(amendment)
        return
    assert isinstance(req, NeedsApproval)
    needs = out.needs_approval
    needs.SetInParent()
    if req.reason is not None:
        needs.reason = req.reason
    if amendment is not None:
        needs.proposed_amendment.prefix.extend(amendment)


def _fill_approval(out: projection_pb2.ApprovalIdentity, key: ApprovalKey) -> None:
    # The digest is the SHA-256 of exactly this text (ApprovalKey.digest): encode it once.
    canonical = key.canonical()
    out.namespace = _NAMESPACES.get(key.namespace, projection_pb2.APPROVAL_NAMESPACE_UNSPECIFIED)
    out.canonical_command.extend(key.command)
    out.environment_id = key.environment_id
    out.cwd = key.cwd
    _fill_key_permissions(out.permissions, key)
    out.canonical_json = canonical.decode()
    out.digest = hashlib.sha256(canonical).hexdigest()
    if key.tty is not None:
        out.tty = key.tty


def _fill_display(out: projection_pb2.ParsedCommand, parsed: ParsedCommand) -> None:
    if isinstance(parsed, Read):
        read = out.read
        read.cmd, read.name, read.path = parsed.cmd, parsed.name, parsed.path
    elif isinstance(parsed, ListFiles):
        lf = out.list_files
        lf.cmd = parsed.cmd
        if parsed.path is not None:
            lf.path = parsed.path
    elif isinstance(parsed, Search):
        s = out.search
        s.cmd = parsed.cmd
        if parsed.query is not None:
            s.query = parsed.query
        if parsed.path is not None:
            s.path = parsed.path
    else:
        out.unknown.cmd = parsed.cmd


def _env_template(env: tuple[tuple[str, str], ...]) -> projection_pb2.ExecutionEnvelope:
    last = _last_env[0] if _last_env else None
    if last is not None and last[0] is env:
        return last[1]
    template = _ENV_PB.get(env)
    if template is None:
        template = projection_pb2.ExecutionEnvelope()
        template.env.update(env)
        _bounded_put(_ENV_PB, env, template)
    _last_env[:] = [(env, template)]
    return template


def _fill_envelope(out: projection_pb2.ExecutionEnvelope, env: ExecutionEnvelope) -> None:
    # First: CopyFrom replaces the whole message with the cached environment map.
    out.CopyFrom(_env_template(env.env))
    out.argv.extend(env.argv)
    out.cwd = env.cwd
    out.sandbox_cwd = env.sandbox_cwd
    out.shell_mode = _SHELL_MODES.get(env.shell_mode or "", shell_pb2.SHELL_MODE_UNSPECIFIED)
    out.default_timeout = env.default_timeout
    out.tty = bool(env.tty)
    _fill_perm(out.requested_permissions, env.requested_permissions)
    _fill_perm(out.effective_permissions, env.effective_permissions)
    out.preapproved = env.preapproved
    if env.timeout_ms is not None:
        out.timeout_ms = env.timeout_ms
    if env.yield_time_ms is not None:
        out.yield_time_ms = env.yield_time_ms
    if env.output_policy is not None:
        _fill_truncation(out.output_budget, env.output_policy)
    if env.process_id is not None:
        out.process_id = env.process_id
    if env.justification is not None:
        out.justification = env.justification


def _fill_hunk(out: projection_pb2.PatchHunk, h: Hunk) -> None:
    if isinstance(h, AddFile):
        add = out.add_file
        add.path, add.contents = h.path, h.contents
        return
    if isinstance(h, DeleteFile):
        out.delete_file.path = h.path
        return
    assert isinstance(h, UpdateFile)
    upd = out.update_file
    upd.path = h.path
    if h.move_path is not None:
        upd.move_path = h.move_path
    for c in h.chunks:
        chunk = upd.chunks.add(
            old_lines=list(c.old_lines),
            new_lines=list(c.new_lines),
            is_end_of_file=c.is_end_of_file,
        )
        if c.change_context is not None:
            chunk.change_context = c.change_context


def _fill_patch(
    out: projection_pb2.ApplyPatchProjection,
    result: ApplyPatchAction | CorrectnessError,
    environment_id: str,
) -> None:
    if isinstance(result, CorrectnessError):
        out.correctness_error = result.message
        return
    digest_source = {"kind": "apply_patch", "patch": result.patch, "cwd": result.cwd}
    body = out.body
    body.workdir = result.workdir or result.cwd
    for h in result.hunks:
        _fill_hunk(body.hunks.add(), h)
    body.environment_id = environment_id
    key = body.approval
    key.namespace = projection_pb2.APPROVAL_NAMESPACE_APPLY_PATCH
    key.environment_id = environment_id
    key.cwd = result.cwd
    key.patch = result.patch
    canonical = canonical_json(digest_source)
    key.canonical_json = canonical.decode()
    key.digest = _sha256(key.canonical_json)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def element_pb(element: ShellElement) -> projection_pb2.ShellElement:
    """One shell element (command with its projections, or intercepted apply_patch)."""
    out = projection_pb2.ShellElement()
    _fill_element(out, element)
    return out


def _fill_element(out: projection_pb2.ShellElement, element: ShellElement) -> None:
    if isinstance(element, PatchElement):
        _fill_patch(out.apply_patch, element.result, element.handler.environment_id)
    else:
        _fill_command(out.command, element)


def _fill_policy(out: projection_pb2.PolicyProjection, e: CommandElement) -> None:
    out.SetInParent()
    commands = out.commands
    for words, span in zip(e.policy.commands, e.policy.spans, strict=True):
        _fill_words(commands.add(), words, span)
    out.used_complex_parsing = e.policy.used_complex_parsing
    out.command_origin = (
        projection_pb2.COMMAND_ORIGIN_POWERSHELL
        if e.policy.command_origin is CommandOrigin.POWERSHELL
        else projection_pb2.COMMAND_ORIGIN_GENERIC
    )
    if e.prefix_rule:
        out.prefix_rule.extend(e.prefix_rule)
    for m in e.approval.segment_matches:
        _fill_rule_match(out.segment_matches.add(), m)
    for m in e.approval.scan_matches:
        _fill_rule_match(out.scan_matches.add(), m)
    if e.literal_commands is not None:
        scan = out.literal_commands
        scan.SetInParent()
        scanned = scan.commands
        for c in e.literal_commands:
            _fill_words(scanned.add(), c.words, c.span)


def _fill_command(out: projection_pb2.HandlerCommandProjection, e: CommandElement) -> None:
    h = e.handler
    out.handler_argv.extend(h.argv)
    shell = out.shell
    shell.type = SHELL_TYPES.to_wire.get(h.shell_type.value, shell_pb2.SHELL_TYPE_UNSPECIFIED)
    shell.path = h.shell_path
    out.login = h.login
    out.environment_id = h.environment_id
    out.remote = h.remote
    out.cwd = h.cwd
    out.sandbox_cwd = h.sandbox_cwd
    _fill_envelope(out.envelope, e.envelope)
    _fill_policy(out.policy, e)
    _fill_approval(out.approval, e.approval_key)
    display = out.display
    for p in e.display:
        _fill_display(display.add(), p)
    _fill_requirement(out.requirement, e.approval.requirement)


def projection_pb(call: ProjectedCall) -> projection_pb2.Projection:
    """The whole projection of one output item."""
    out = projection_pb2.Projection()
    fill_projection(out, call)
    return out


def fill_projection(out: projection_pb2.Projection, call: ProjectedCall) -> None:
    """Write the projection of one output item into `out` (an empty message, e.g. a field).

    Filling in place matters: a constructed sub-message handed to its parent is copied,
    once per nesting level.
    """
    out.call_id = call.call_id
    if call.warnings:
        out.warnings.extend(call.warnings)
    if call.tool_name is not None:
        out.tool_name = call.tool_name.name
        if call.tool_name.namespace is not None:
            out.tool_namespace = call.tool_name.namespace
    if call.payload_kind is not None:
        out.payload_kind = _PAYLOADS.get(
            call.payload_kind.value, projection_pb2.PAYLOAD_KIND_UNSPECIFIED
        )
    o = call.outcome
    if isinstance(o, NoToolCallOutcome):
        out.no_tool_call.reason = o.reason
    elif isinstance(o, ToolErrorOutcome):
        out.tool_error.text = o.text
    elif isinstance(o, ShellCall):
        shell = out.shell
        shell.batch = o.batch
        elements = shell.elements
        for e in o.elements:
            _fill_element(elements.add(), e)
    elif isinstance(o, ApplyPatchToolCall):
        _fill_patch(out.apply_patch, o.result, o.environment_id)
    elif isinstance(o, WriteStdinCall):
        ws = out.write_stdin
        ws.session_id = o.params.session_id
        ws.chars = o.params.chars
        ws.yield_time_ms = o.yield_time_ms
        _fill_truncation(ws.output_budget, o.output_policy)


def projection_json(call: ProjectedCall) -> str:
    """The projection as protobuf JSON (field names as in the .proto)."""
    return json.dumps(
        json_format.MessageToDict(projection_pb(call), preserving_proto_field_name=True),
        indent=2,
        ensure_ascii=False,
    )
