"""The projection of one model output item: domain types shared by `Project` and `Execute`.

A `ProjectedCall` is what the pipeline (`pipeline.project`) computes without side effects:
the routed call, and exactly one outcome — no tool call, a tool error text, a shell call
(one element, or several for a shell_command batch), the apply_patch custom tool, or a
write_stdin request. Each shell element is either an ordinary command with its three
independent projections (A envelope, B policy, C approval identity), display metadata and
approval requirement, or an intercepted apply_patch.

`ProjectionMemo` holds what the router reuses from one projection to the next.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar, cast

from shellgate.router.apply_patch import ApplyPatchAction, CorrectnessError
from shellgate.router.approval_identity import ApprovalKey, ResolutionEnv, SessionApprovalKey
from shellgate.router.bash.segments import ScriptCommand
from shellgate.router.decode.params import WriteStdinParams
from shellgate.router.decode.tool_call import PayloadKind, ToolName
from shellgate.router.display.types import ParsedCommand
from shellgate.router.envelope import (
    CommandSite,
    Environment,
    ExecutionEnvelope,
    policy_environment,
)
from shellgate.router.handler.permissions import PermissionOutcome
from shellgate.router.handler.plan import HandlerCommand
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.policy import ApprovalOutcome
from shellgate.router.policy_projection import PolicyProjection


@dataclass(frozen=True)
class CommandElement:
    """An ordinary shell command: handler command plus A, B, C, display and requirement."""

    handler: HandlerCommand
    envelope: ExecutionEnvelope
    policy: PolicyProjection
    literal_commands: tuple[ScriptCommand, ...] | None
    approval_key: ApprovalKey
    display: tuple[ParsedCommand, ...]
    approval: ApprovalOutcome
    prefix_rule: tuple[str, ...] | None
    # The envelope's resolution variables (PATH, LD_*, …) the turn's policy changed from
    # the router's own: part of what "approved for session" remembers (shellgate's
    # difference from Codex; `approval_identity.session_cache_digest`).
    resolution_env: ResolutionEnv = ()

    @property
    def session_key(self) -> SessionApprovalKey:
        """Codex's approval key bound to the resolution overrides (the session cache key)."""
        return SessionApprovalKey(self.approval_key, self.resolution_env)


@dataclass(frozen=True)
class PatchElement:
    """A handler command recognised as apply_patch: a verified action or the error text."""

    handler: HandlerCommand
    envelope: ExecutionEnvelope
    result: ApplyPatchAction | CorrectnessError


ShellElement = CommandElement | PatchElement


@dataclass(frozen=True)
class ShellCall:
    """A shell_command or exec_command call: its elements in order."""

    tool: str
    elements: tuple[ShellElement, ...]
    batch: bool
    permissions: PermissionOutcome


@dataclass(frozen=True)
class NoToolCallOutcome:
    """The item is not a tool call shellgate dispatches (messages, reasoning, …)."""

    reason: str


@dataclass(frozen=True)
class ToolErrorOutcome:
    """The exact text the model receives instead of running anything."""

    text: str


@dataclass(frozen=True)
class ApplyPatchToolCall:
    """The freeform apply_patch custom tool: patch text, the cwd it applies in, verification."""

    patch: str
    environment_id: str
    cwd: str
    result: ApplyPatchAction | CorrectnessError


@dataclass(frozen=True)
class WriteStdinCall:
    """A write_stdin call for a session of the thread."""

    params: WriteStdinParams
    yield_time_ms: int
    output_policy: TruncationPolicy


Outcome = NoToolCallOutcome | ToolErrorOutcome | ShellCall | ApplyPatchToolCall | WriteStdinCall


@dataclass(frozen=True)
class ProjectedCall:
    """One decoded and projected model output item."""

    call_id: str
    tool_name: ToolName | None
    payload_kind: PayloadKind | None
    outcome: Outcome
    warnings: tuple[str, ...] = ()


K = TypeVar("K", bound=Hashable)
M = TypeVar("M")

# Distinct (parent env, policy, thread, platform, tool, profile) environments kept.
ENVIRONMENT_CACHE_SIZE = 256
# Values kept per message builder (the wire projection's pre-built sub-messages).
MESSAGE_CACHE_SIZE = 64


class _Builder:
    """One builder's bounded cache and the last (key, value) it returned."""

    __slots__ = ("cached", "last")

    def __init__(self, build: Callable[[Hashable], object], size: int) -> None:
        self.cached = lru_cache(maxsize=size)(build)
        self.last: tuple[object, object] | None = None


class ProjectionMemo:
    """What the router reuses between projections: environments and pre-built messages.

    The router application owns one (`RouterApp.memo`) and hands it to the pipeline in
    `HostContext` and to the wire projection; nothing here is module-global. It is shared
    by the event loop and the worker threads that project large items, so it is safe to
    use from several threads at once: each cache is a `functools.lru_cache` (bounded, its
    bookkeeping thread-safe; two threads may build the same value once each, and the values
    are equal), and each "last used" slot is one tuple, read and replaced whole.
    """

    __slots__ = ("_builders", "_environments", "_last_environment", "_message_cache_size")

    def __init__(
        self,
        *,
        environments: int = ENVIRONMENT_CACHE_SIZE,
        messages: int = MESSAGE_CACHE_SIZE,
    ) -> None:
        self._environments = lru_cache(maxsize=environments)(policy_environment)
        self._last_environment: tuple[CommandSite, bool, Environment] | None = None
        self._message_cache_size = messages
        self._builders: dict[object, _Builder] = {}

    def environment(self, site: CommandSite, unified: bool) -> Environment:
        """`envelope.site_environment(site, unified)`, computed once per distinct input.

        The parent environment (the router's own) and the turn's policy rarely change, and
        the policy pass matches every variable against every glob. Consecutive commands of
        one turn pass the same parent tuple and policy objects, so an identity check against
        the last site skips hashing ~40 pairs.
        """
        parent = site.parent_env
        last = self._last_environment
        if last is not None and isinstance(parent, tuple):
            seen, seen_unified, env = last
            if (
                seen.parent_env is parent
                and seen.env_policy is site.env_policy
                and seen_unified is unified
                and seen.thread_id == site.thread_id
                and seen.platform == site.platform
                and seen.active_profile == site.active_profile
            ):
                return env
        items = parent if isinstance(parent, tuple) else tuple(parent.items())
        env = self._environments(
            items, site.env_policy, site.thread_id, site.platform, unified, site.active_profile
        )
        self._last_environment = (site, unified, env)
        return env

    def message(self, build: Callable[[K], M], key: K) -> M:
        """`build(key)`, kept per builder for equal keys (bounded, least recently used out).

        For the wire projection, whose sub-messages repeat across calls: a kept message is
        only ever copied from, never changed. The key object a builder saw last is answered
        by identity, without hashing (the envelope's environment tuple is ~40 pairs).
        `build` must be a module-level function: each distinct builder is registered once.
        """
        builder = self._builders.get(build)
        if builder is None:
            made = _Builder(cast(Callable[[Hashable], object], build), self._message_cache_size)
            # setdefault: a builder registered by another thread meanwhile wins.
            builder = self._builders.setdefault(build, made)
        last = builder.last
        if last is not None and last[0] is key:
            # Sound: a builder's cache only holds what that builder returned.
            return cast(M, last[1])
        value = builder.cached(key)
        builder.last = (key, value)
        return cast(M, value)
