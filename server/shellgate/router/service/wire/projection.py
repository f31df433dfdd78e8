"""`ProjectedCall` (domain) → `shellgate.v1.Projection` (wire)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

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
from shellgate.router.approval_identity import ApprovalKey, ApprovalKind, canonical_json
from shellgate.router.decode.params import FileSystemAccess
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.decode.tool_call import PayloadKind
from shellgate.router.decode.tools import UnifiedExecShellMode
from shellgate.router.display.types import ListFiles, ParsedCommand, Read, Search
from shellgate.router.envelope import Environment, ExecutionEnvelope, Permissions
from shellgate.router.handler.permissions import PermissionProfile
from shellgate.router.handler.shells import ShellType
from shellgate.router.output.truncation import TruncationPolicy, TruncationUnit
from shellgate.router.policy import (
    Decision,
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
    ProjectionMemo,
    ShellCall,
    ShellElement,
    ToolErrorOutcome,
    WriteStdinCall,
)
from shellgate.v1 import common_pb2, projection_pb2, shell_pb2

# Domain enum → wire enum, one table each (looked up by member, never by string).
# fmt: off
_SHELL_TYPES = {t: SHELL_TYPES.to_wire.get(t.value, shell_pb2.SHELL_TYPE_UNSPECIFIED)
                for t in ShellType}
_SHELL_MODES = {UnifiedExecShellMode.DIRECT: shell_pb2.SHELL_MODE_DIRECT,
                UnifiedExecShellMode.ZSH_FORK: shell_pb2.SHELL_MODE_ZSH_FORK}
_PAYLOADS = {PayloadKind.FUNCTION: projection_pb2.PAYLOAD_KIND_FUNCTION,
             PayloadKind.CUSTOM: projection_pb2.PAYLOAD_KIND_CUSTOM,
             PayloadKind.TOOL_SEARCH: projection_pb2.PAYLOAD_KIND_TOOL_SEARCH}
_DECISIONS = {Decision.ALLOW: projection_pb2.POLICY_DECISION_ALLOW,
              Decision.PROMPT: projection_pb2.POLICY_DECISION_PROMPT,
              Decision.FORBIDDEN: projection_pb2.POLICY_DECISION_FORBIDDEN}
_SANDBOX = {SandboxPermissions.USE_DEFAULT: common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
            SandboxPermissions.REQUIRE_ESCALATED: common_pb2.SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
            SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS:
                common_pb2.SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS}
_ACCESS = {FileSystemAccess.READ: common_pb2.FILE_SYSTEM_ACCESS_READ,
           FileSystemAccess.WRITE: common_pb2.FILE_SYSTEM_ACCESS_WRITE,
           FileSystemAccess.NONE: common_pb2.FILE_SYSTEM_ACCESS_NONE}
_NAMESPACES = {ApprovalKind.SHELL_COMMAND: projection_pb2.APPROVAL_NAMESPACE_SHELL,
               ApprovalKind.EXEC_COMMAND: projection_pb2.APPROVAL_NAMESPACE_UNIFIED_EXEC}
# fmt: on


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


def _fill_additional(out: common_pb2.AdditionalPermissions, profile: PermissionProfile) -> None:
    out.network.enabled = profile.network_enabled
    if profile.entries:
        entries = out.file_system.entries
        for path, access in sorted(profile.entries):
            entries.add(path=path, access=_ACCESS[access])
    if profile.glob_scan_max_depth is not None:
        out.file_system.glob_scan_max_depth = profile.glob_scan_max_depth


def _permissions_message(p: Permissions) -> projection_pb2.CommandPermissions:
    out = projection_pb2.CommandPermissions(sandbox_permissions=_SANDBOX[p.sandbox_permissions])
    if p.additional_permissions is not None:
        _fill_additional(out.additional_permissions, p.additional_permissions)
    return out


def _fill_permissions(
    out: projection_pb2.CommandPermissions, p: Permissions, memo: ProjectionMemo | None
) -> None:
    if p.additional_permissions is None:
        # The usual case is one enum field: cheaper to set than to look up and copy.
        out.sandbox_permissions = _SANDBOX[p.sandbox_permissions]
        return
    # A profile is built once per distinct value (bounded), then copied.
    out.CopyFrom(
        _permissions_message(p) if memo is None else memo.message(_permissions_message, p)
    )


def _fill_rule_match(out: projection_pb2.RuleMatch, match: RuleMatch) -> None:
    if isinstance(match, HeuristicsRuleMatch):
        h = out.heuristics_rule_match
        h.command.extend(match.command)
        h.decision = _DECISIONS[match.decision]
        return
    prefix = out.prefix_rule_match
    prefix.matched_prefix.extend(match.matched_prefix)
    prefix.decision = _DECISIONS[match.decision]
    if match.resolved_program is not None:
        prefix.resolved_program = match.resolved_program
    if match.justification is not None:
        prefix.justification = match.justification
    if match.rule is not None and match.rule.source is not None:
        prefix.source = str(match.rule.source)


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


def _fill_approval(
    out: projection_pb2.ApprovalIdentity, key: ApprovalKey, memo: ProjectionMemo | None
) -> None:
    # The digest is the SHA-256 of exactly this text (ApprovalKey.digest): encode it once.
    canonical = key.canonical()
    out.namespace = _NAMESPACES[key.kind]
    out.canonical_command.extend(key.command)
    out.environment_id = key.environment_id
    out.cwd = key.cwd
    permissions = Permissions(key.sandbox_permissions, key.additional_permissions)
    _fill_permissions(out.permissions, permissions, memo)
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


def _envelope_template(env: Environment) -> projection_pb2.ExecutionEnvelope:
    template = projection_pb2.ExecutionEnvelope()
    template.env.update(env)
    return template


def _fill_envelope(
    out: projection_pb2.ExecutionEnvelope, env: ExecutionEnvelope, memo: ProjectionMemo | None
) -> None:
    # First: CopyFrom replaces the whole message with the environment map, which repeats
    # across calls (the memo keeps it by the envelope's environment tuple).
    template = (
        _envelope_template(env.env) if memo is None else memo.message(_envelope_template, env.env)
    )
    out.CopyFrom(template)
    out.argv.extend(env.argv)
    out.cwd = env.cwd
    out.sandbox_cwd = env.sandbox_cwd
    out.shell_mode = (
        shell_pb2.SHELL_MODE_UNSPECIFIED if env.shell_mode is None else _SHELL_MODES[env.shell_mode]
    )
    out.default_timeout = env.default_timeout
    out.tty = bool(env.tty)
    _fill_permissions(out.requested_permissions, env.requested_permissions, memo)
    _fill_permissions(out.effective_permissions, env.effective_permissions, memo)
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


def element_pb(
    element: ShellElement, memo: ProjectionMemo | None = None
) -> projection_pb2.ShellElement:
    """One shell element (command with its projections, or intercepted apply_patch)."""
    out = projection_pb2.ShellElement()
    _fill_element(out, element, memo)
    return out


def _fill_element(
    out: projection_pb2.ShellElement, element: ShellElement, memo: ProjectionMemo | None
) -> None:
    if isinstance(element, PatchElement):
        _fill_patch(out.apply_patch, element.result, element.handler.environment_id)
    else:
        _fill_command(out.command, element, memo)


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


def _fill_command(
    out: projection_pb2.HandlerCommandProjection, e: CommandElement, memo: ProjectionMemo | None
) -> None:
    h = e.handler
    out.handler_argv.extend(h.argv)
    shell = out.shell
    shell.type = _SHELL_TYPES[h.shell_type]
    shell.path = h.shell_path
    out.login = h.login
    out.environment_id = h.environment_id
    out.remote = h.remote
    out.cwd = h.cwd
    out.sandbox_cwd = h.sandbox_cwd
    _fill_envelope(out.envelope, e.envelope, memo)
    _fill_policy(out.policy, e)
    _fill_approval(out.approval, e.approval_key, memo)
    display = out.display
    for p in e.display:
        _fill_display(display.add(), p)
    _fill_requirement(out.requirement, e.approval.requirement)


def projection_pb(
    call: ProjectedCall, memo: ProjectionMemo | None = None
) -> projection_pb2.Projection:
    """The whole projection of one output item."""
    out = projection_pb2.Projection()
    fill_projection(out, call, memo)
    return out


def fill_projection(
    out: projection_pb2.Projection, call: ProjectedCall, memo: ProjectionMemo | None = None
) -> None:
    """Write the projection of one output item into `out` (an empty message, e.g. a field).

    Filling in place matters: a constructed sub-message handed to its parent is copied,
    once per nesting level. With a `memo`, sub-messages that repeat across calls (the
    environment map, permission profiles) are built once and copied in; without one, each
    is built afresh. The bytes are the same either way.
    """
    out.call_id = call.call_id
    if call.warnings:
        out.warnings.extend(call.warnings)
    if call.tool_name is not None:
        out.tool_name = call.tool_name.name
        if call.tool_name.namespace is not None:
            out.tool_namespace = call.tool_name.namespace
    if call.payload_kind is not None:
        out.payload_kind = _PAYLOADS[call.payload_kind]
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
            _fill_element(elements.add(), e, memo)
    elif isinstance(o, ApplyPatchToolCall):
        _fill_patch(out.apply_patch, o.result, o.environment_id)
    elif isinstance(o, WriteStdinCall):
        ws = out.write_stdin
        ws.session_id = o.params.session_id
        ws.chars = o.params.chars
        ws.yield_time_ms = o.yield_time_ms
        _fill_truncation(ws.output_budget, o.output_policy)


def projection_json(call: ProjectedCall, memo: ProjectionMemo | None = None) -> str:
    """The projection as protobuf JSON (field names as in the .proto)."""
    return json.dumps(
        json_format.MessageToDict(projection_pb(call, memo), preserving_proto_field_name=True),
        indent=2,
        ensure_ascii=False,
    )
