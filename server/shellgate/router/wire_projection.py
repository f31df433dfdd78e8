"""`ProjectedCall` (domain) → `shellgate.v1.Projection` (wire)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from google.protobuf import json_format
from shellgate.execserver.convert import SHELL_TYPES
from shellgate.router.apply_patch import (
    AddFile,
    ApplyPatchAction,
    CorrectnessError,
    DeleteFile,
    Hunk,
    UpdateFile,
)
from shellgate.router.approval_identity import ApprovalKey, canonical_json
from shellgate.router.display_types import ListFiles, ParsedCommand, Read, Search
from shellgate.router.envelope import ExecutionEnvelope, Permissions
from shellgate.router.output import TruncationPolicy, TruncationUnit
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
from shellgate.router.segments import ScriptCommand
from shellgate.v1 import common_pb2, projection_pb2, shell_pb2

_SHELL_MODES = {"direct": shell_pb2.SHELL_MODE_DIRECT, "zsh_fork": shell_pb2.SHELL_MODE_ZSH_FORK}
_PAYLOADS = {
    "function": projection_pb2.PAYLOAD_KIND_FUNCTION,
    "custom": projection_pb2.PAYLOAD_KIND_CUSTOM,
    "tool_search": projection_pb2.PAYLOAD_KIND_TOOL_SEARCH,
}
_DECISIONS = {
    "allow": projection_pb2.POLICY_DECISION_ALLOW,
    "prompt": projection_pb2.POLICY_DECISION_PROMPT,
    "forbidden": projection_pb2.POLICY_DECISION_FORBIDDEN,
}
_SANDBOX = {
    "use_default": common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
    "require_escalated": common_pb2.SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
    "with_additional_permissions": common_pb2.SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS,
}
_ACCESS = {
    "read": common_pb2.FILE_SYSTEM_ACCESS_READ,
    "write": common_pb2.FILE_SYSTEM_ACCESS_WRITE,
    "none": common_pb2.FILE_SYSTEM_ACCESS_NONE,
}
_NAMESPACES = {
    "shell": projection_pb2.APPROVAL_NAMESPACE_SHELL,
    "unified_exec": projection_pb2.APPROVAL_NAMESPACE_UNIFIED_EXEC,
}


def truncation_pb(policy: TruncationPolicy) -> common_pb2.TruncationPolicy:
    """A truncation policy on the wire."""
    if policy.unit is TruncationUnit.TOKENS:
        return common_pb2.TruncationPolicy(tokens=policy.limit)
    return common_pb2.TruncationPolicy(bytes=policy.limit)


def _words(words: Iterable[str], span: tuple[int, int] | None) -> projection_pb2.CommandWords:
    out = projection_pb2.CommandWords(words=list(words))
    if span is not None:
        out.span.start, out.span.end = span
    return out


def _scan(commands: tuple[ScriptCommand, ...]) -> projection_pb2.LiteralCommandScan:
    return projection_pb2.LiteralCommandScan(
        commands=[_words(c.words, (c.span.start, c.span.end)) for c in commands]
    )


def _additional(profile: object) -> common_pb2.AdditionalPermissions | None:
    if not isinstance(profile, dict):
        return None
    out = common_pb2.AdditionalPermissions()
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
    return out


def _permissions(sandbox: str, profile: object) -> projection_pb2.CommandPermissions:
    out = projection_pb2.CommandPermissions(
        sandbox_permissions=_SANDBOX.get(sandbox, common_pb2.SANDBOX_PERMISSIONS_UNSPECIFIED)
    )
    additional = _additional(profile)
    if additional is not None:
        out.additional_permissions.CopyFrom(additional)
    return out


def _perm(p: Permissions) -> projection_pb2.CommandPermissions:
    return _permissions(p.sandbox_permissions, p.additional_permissions)


def rule_match_pb(match: RuleMatch) -> projection_pb2.RuleMatch:
    """One rule match on the wire."""
    if isinstance(match, HeuristicsRuleMatch):
        return projection_pb2.RuleMatch(
            heuristics_rule_match=projection_pb2.HeuristicsRuleMatch(
                command=list(match.command), decision=_DECISIONS[match.decision.value]
            )
        )
    prefix = projection_pb2.PrefixRuleMatch(
        matched_prefix=list(match.matched_prefix), decision=_DECISIONS[match.decision.value]
    )
    if match.resolved_program is not None:
        prefix.resolved_program = match.resolved_program
    if match.justification is not None:
        prefix.justification = match.justification
    return projection_pb2.RuleMatch(prefix_rule_match=prefix)


def requirement_pb(req: ExecApprovalRequirement) -> projection_pb2.ApprovalRequirement:
    """An approval requirement on the wire."""
    if isinstance(req, Forbidden):
        return projection_pb2.ApprovalRequirement(
            forbidden=projection_pb2.RequirementForbidden(reason=req.reason)
        )
    amendment = req.proposed_execpolicy_amendment
    if isinstance(req, Skip):
        skip = projection_pb2.RequirementSkip(bypass_sandbox=req.bypass_sandbox)
        if amendment is not None:
            skip.proposed_amendment.prefix.extend(amendment)
        return projection_pb2.ApprovalRequirement(skip=skip)
    assert isinstance(req, NeedsApproval)
    needs = projection_pb2.RequirementNeedsApproval()
    if req.reason is not None:
        needs.reason = req.reason
    if amendment is not None:
        needs.proposed_amendment.prefix.extend(amendment)
    return projection_pb2.ApprovalRequirement(needs_approval=needs)


def approval_pb(key: ApprovalKey) -> projection_pb2.ApprovalIdentity:
    """An approval identity (key fields, canonical JSON, digest) on the wire."""
    # The digest is the SHA-256 of exactly this text (ApprovalKey.digest): encode it once.
    canonical = canonical_json(key.to_json())
    out = projection_pb2.ApprovalIdentity(
        namespace=_NAMESPACES.get(key.namespace, projection_pb2.APPROVAL_NAMESPACE_UNSPECIFIED),
        canonical_command=list(key.command),
        environment_id=key.environment_id,
        cwd=key.cwd,
        permissions=_permissions(key.sandbox_permissions, key.additional_permissions),
        canonical_json=canonical.decode(),
        digest=hashlib.sha256(canonical).hexdigest(),
    )
    if key.tty is not None:
        out.tty = key.tty
    return out


def _display(parsed: ParsedCommand) -> projection_pb2.ParsedCommand:
    if isinstance(parsed, Read):
        return projection_pb2.ParsedCommand(
            read=projection_pb2.ParsedRead(cmd=parsed.cmd, name=parsed.name, path=parsed.path)
        )
    if isinstance(parsed, ListFiles):
        lf = projection_pb2.ParsedListFiles(cmd=parsed.cmd)
        if parsed.path is not None:
            lf.path = parsed.path
        return projection_pb2.ParsedCommand(list_files=lf)
    if isinstance(parsed, Search):
        s = projection_pb2.ParsedSearch(cmd=parsed.cmd)
        if parsed.query is not None:
            s.query = parsed.query
        if parsed.path is not None:
            s.path = parsed.path
        return projection_pb2.ParsedCommand(search=s)
    return projection_pb2.ParsedCommand(unknown=projection_pb2.ParsedUnknown(cmd=parsed.cmd))


def envelope_pb(env: ExecutionEnvelope) -> projection_pb2.ExecutionEnvelope:
    """The execution envelope (projection A) on the wire."""
    out = projection_pb2.ExecutionEnvelope(
        argv=list(env.argv),
        cwd=env.cwd,
        sandbox_cwd=env.sandbox_cwd,
        env=dict(env.env),
        shell_mode=_SHELL_MODES.get(env.shell_mode or "", shell_pb2.SHELL_MODE_UNSPECIFIED),
        default_timeout=env.default_timeout,
        tty=bool(env.tty),
        requested_permissions=_perm(env.requested_permissions),
        effective_permissions=_perm(env.effective_permissions),
        preapproved=env.preapproved,
    )
    if env.timeout_ms is not None:
        out.timeout_ms = env.timeout_ms
    if env.yield_time_ms is not None:
        out.yield_time_ms = env.yield_time_ms
    if env.output_policy is not None:
        out.output_budget.CopyFrom(truncation_pb(env.output_policy))
    if env.process_id is not None:
        out.process_id = env.process_id
    if env.justification is not None:
        out.justification = env.justification
    return out


def _hunk(h: Hunk) -> projection_pb2.PatchHunk:
    if isinstance(h, AddFile):
        return projection_pb2.PatchHunk(
            add_file=projection_pb2.AddFileHunk(path=h.path, contents=h.contents)
        )
    if isinstance(h, DeleteFile):
        return projection_pb2.PatchHunk(delete_file=projection_pb2.DeleteFileHunk(path=h.path))
    assert isinstance(h, UpdateFile)
    upd = projection_pb2.UpdateFileHunk(path=h.path)
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
    return projection_pb2.PatchHunk(update_file=upd)


def patch_pb(
    result: ApplyPatchAction | CorrectnessError, environment_id: str
) -> projection_pb2.ApplyPatchProjection:
    """An apply_patch recognition result on the wire."""
    if isinstance(result, CorrectnessError):
        return projection_pb2.ApplyPatchProjection(correctness_error=result.message)
    digest_source = {"kind": "apply_patch", "patch": result.patch, "cwd": result.cwd}
    key = projection_pb2.ApprovalIdentity(
        namespace=projection_pb2.APPROVAL_NAMESPACE_APPLY_PATCH,
        environment_id=environment_id,
        cwd=result.cwd,
        patch=result.patch,
        canonical_json=canonical_json(digest_source).decode(),
    )
    key.digest = _sha256(key.canonical_json)
    return projection_pb2.ApplyPatchProjection(
        body=projection_pb2.PatchBody(
            workdir=result.workdir or result.cwd,
            hunks=[_hunk(h) for h in result.hunks],
            environment_id=environment_id,
            approval=key,
        )
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def element_pb(element: ShellElement) -> projection_pb2.ShellElement:
    """One shell element (command with its projections, or intercepted apply_patch)."""
    if isinstance(element, PatchElement):
        return projection_pb2.ShellElement(
            apply_patch=patch_pb(element.result, element.handler.environment_id)
        )
    return projection_pb2.ShellElement(command=command_pb(element))


def command_pb(e: CommandElement) -> projection_pb2.HandlerCommandProjection:
    """A handler command with A, B, C, display and requirement."""
    h = e.handler
    policy = projection_pb2.PolicyProjection(
        commands=[
            _words(words, None if span is None else (span.start, span.end))
            for words, span in zip(e.policy.commands, e.policy.spans, strict=True)
        ],
        used_complex_parsing=e.policy.used_complex_parsing,
        command_origin=(
            projection_pb2.COMMAND_ORIGIN_POWERSHELL
            if e.policy.command_origin is CommandOrigin.POWERSHELL
            else projection_pb2.COMMAND_ORIGIN_GENERIC
        ),
        prefix_rule=list(e.prefix_rule or ()),
        segment_matches=[rule_match_pb(m) for m in e.approval.segment_matches],
        scan_matches=[rule_match_pb(m) for m in e.approval.scan_matches],
    )
    if e.literal_commands is not None:
        policy.literal_commands.CopyFrom(_scan(e.literal_commands))
    return projection_pb2.HandlerCommandProjection(
        handler_argv=list(h.argv),
        shell=shell_pb2.ShellInfo(
            type=SHELL_TYPES.get(h.shell_type.value, shell_pb2.SHELL_TYPE_UNSPECIFIED),
            path=h.shell_path,
        ),
        login=h.login,
        environment_id=h.environment_id,
        remote=h.remote,
        cwd=h.cwd,
        sandbox_cwd=h.sandbox_cwd,
        envelope=envelope_pb(e.envelope),
        policy=policy,
        approval=approval_pb(e.approval_key),
        display=[_display(p) for p in e.display],
        requirement=requirement_pb(e.approval.requirement),
    )


def projection_pb(call: ProjectedCall) -> projection_pb2.Projection:
    """The whole projection of one output item."""
    out = projection_pb2.Projection(call_id=call.call_id, warnings=list(call.warnings))
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
        out.shell.batch = o.batch
        out.shell.elements.extend(element_pb(e) for e in o.elements)
    elif isinstance(o, ApplyPatchToolCall):
        out.apply_patch.CopyFrom(patch_pb(o.result, o.environment_id))
    elif isinstance(o, WriteStdinCall):
        out.write_stdin.session_id = o.params.session_id
        out.write_stdin.chars = o.params.chars
        out.write_stdin.yield_time_ms = o.yield_time_ms
        out.write_stdin.output_budget.CopyFrom(truncation_pb(o.output_policy))
    return out


def projection_json(call: ProjectedCall) -> str:
    """The projection as protobuf JSON (field names as in the .proto)."""
    return json.dumps(
        json_format.MessageToDict(projection_pb(call), preserving_proto_field_name=True),
        indent=2,
        ensure_ascii=False,
    )
