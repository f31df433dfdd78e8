"""The router application: configuration, policy, environments and threads, owned together.

`RouterApp` is what the gRPC servicer talks to; it owns every long-lived piece and closes
them in order (`aclose`), so a shutdown kills every process the router started.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from shellgate.common.auth import Authenticator, TokenEntry, load_tokens
from shellgate.common.errors import EnvironmentNotAllowedError
from shellgate.common.process.run_as import RunAs, RunAsError
from shellgate.common.tasks import TaskSet
from shellgate.router.apply_patch import PatchFileSystem
from shellgate.router.handler.shells import HostShellFacts
from shellgate.router.pipeline import HostContext, RouterTurn
from shellgate.router.policy import Policy
from shellgate.router.projection import ProjectionMemo
from shellgate.router.runtime.approvals.desk import OperatorDesk
from shellgate.router.runtime.audit import AuditSink, AuditTee
from shellgate.router.runtime.call.ledger import CallLedger
from shellgate.router.runtime.environments.egress import EnvironmentEgress, network_rules
from shellgate.router.runtime.environments.registry import (
    LOCAL_ENVIRONMENT_ID,
    EnvironmentRegistry,
    LocalEnvironment,
    gather_host_shell_facts,
)
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment
from shellgate.router.runtime.environments.remote.fs import RemoteFileSystem
from shellgate.router.runtime.store.monitor import StoreMonitor
from shellgate.router.runtime.threads.registry import ThreadRegistry
from shellgate.router.runtime.threads.tally import StateLimits
from shellgate.router.service.admission import Admission
from shellgate.router.service.audit_log import open_audit_log
from shellgate.router.service.config import ConfigError, RouterConfig
from shellgate.router.service.metrics import Metrics
from shellgate.router.service.operator_setup import build_operator_route
from shellgate.router.service.redaction import Redactor, load_values
from shellgate.router.service.rules_store import PolicyStore, ReloadResult
from shellgate.router.service.shared_store import open_shared_store
from shellgate.router.service.wire.turns import TurnBook
from shellgate.v1 import common_pb2

if TYPE_CHECKING:
    from shellgate.router.runtime.store.redis_bus import RedisBus

VERSION = "0.1.0"
# The subject of callers holding the generated local token (shellgate.common.local_token).
LOCAL_SUBJECT = "local"
_NO_RULES = Policy()


@dataclass(frozen=True)
class Caller:
    """An authenticated client and the environments it may use (None = all)."""

    subject: str
    environments: frozenset[str] | None


log = logging.getLogger(__name__)
# How long a stop waits for answered calls' bookkeeping (ExecuteOnce's tails).
CALL_TAILS_GRACE_S = 5.0
T = TypeVar("T")


def _run_as(user: str) -> RunAs | None:
    if not user:
        return None
    try:
        return RunAs.resolve(user)
    except RunAsError as exc:
        raise ConfigError(str(exc)) from exc


ENVIRONMENT_GAUGES = {
    "shellgate_environments_unreachable": "Remote environments unreachable now.",
    "shellgate_environments_circuit_open": "Remote environments whose circuit is open.",
    "shellgate_environment_calls_failed_fast": "Calls refused fast by an open circuit (total).",
}


def _reloaded(metrics: Metrics, result: ReloadResult) -> None:
    """Count a rules reload and log it: INFO when applied, ERROR with file:line when not."""
    metrics.rules_reloaded(result.ok)
    if result.ok:
        log.info("rules reloaded")
    else:
        log.error("rules reload failed; keeping the last good policy:\n%s", result.error)


class RouterApp:
    """Everything the router serves from, with one owner."""

    def __init__(
        self,
        config: RouterConfig,
        *,
        parent_env: Mapping[str, str] | None = None,
        local_token: str | None = None,
    ):
        self.config = config
        self.instance_id = uuid.uuid4().hex
        self.parent_env = dict(os.environ if parent_env is None else parent_env)
        self.host_shell: HostShellFacts = gather_host_shell_facts(config.local_shell or None)
        tokens = load_tokens(config.token_file) if config.token_file else ()
        if local_token is not None:
            tokens = (TokenEntry(LOCAL_SUBJECT, local_token.encode()),)
        self.auth = Authenticator(
            tokens, mtls=bool(config.tls_client_ca_file),
            mtls_operators=config.approvals.operator_subjects,
        )  # fmt: skip
        self._client_envs = {s: frozenset(e) for s, e in config.client_environments}
        # Read once at start: a missing or bad values file refuses to start (ConfigError).
        self.redactor: Redactor | None = (
            Redactor(load_values(config.redact_values_files))
            if config.redact_values_files
            else None
        )
        # The writer's lock is taken here: a second router on the file stops here (one line).
        self.audit = open_audit_log(config, self.redactor.json_text if self.redactor else None)
        self.policy_store: PolicyStore | None = None
        if config.rules_dirs:
            self.policy_store = PolicyStore([Path(d).expanduser() for d in config.rules_dirs])
            self.policy_store.load_initial()
        # `[network]`: the local environment's egress proxy, with the rules' network hosts.
        store = self.policy_store
        rules = network_rules(lambda: store.policy) if store is not None else None
        self.egress = (
            EnvironmentEgress(LOCAL_ENVIRONMENT_ID, config.network.policy(), rules)
            if config.network.enabled
            else None
        )
        local = (
            LocalEnvironment(
                cwd=config.local_cwd or os.getcwd(),
                masked_paths=config.secret_files(),
                run_as=_run_as(config.run_as),
                egress=self.egress,
            )
            if config.local_environment
            else None
        )
        remotes = [RemoteEnvironment(r, client_env=self.parent_env) for r in config.environments]
        self.environments = EnvironmentRegistry(local, remotes)
        self.metrics = Metrics(self.environments.ids())
        # The shared store's reachability (None: in memory, always there); health and
        # metrics report it, and RunningRouter runs its probe.
        self.store_monitor: StoreMonitor | None = None
        self.store_probe: Callable[[], Awaitable[None]] | None = None
        # Scaled mode (redis_url): the replica bus and the shared amendments layer.
        self.bus: RedisBus | None = None
        shared = open_shared_store(config, self.audit)
        if shared is not None:
            self.store_monitor, self.store_probe = shared.monitor, shared.probe
            self.metrics.watch_shared_state(shared.monitor)
            # Shared sessions live as long as their thread: every sweep renews their daemon
            # owner TTL while the thread lives, and a daemon reaps them one thread TTL (plus
            # a sweep) after the last renewal when no router is left to kill them.
            self.environments.set_session_owner_ttl(
                config.limits.thread_idle_ttl_ms + config.limits.sweep_interval_ms
            )
        self.threads = ThreadRegistry(
            approval_ttl_ms=config.limits.approval_ttl_ms,
            idle_ttl_ms=config.limits.thread_idle_ttl_ms,
            shared=shared,
            environments=self.environments,
            instance_id=self.instance_id,
            max_threads=config.limits.max_threads,
            limits=StateLimits(
                max_pending_per_thread=config.limits.max_pending_approvals_per_thread,
                max_pending=config.limits.max_pending_approvals,
                max_sessions_per_thread=config.limits.max_unified_sessions_per_thread,
                max_sessions=config.limits.max_unified_sessions,
            ),
        )
        # Idempotent call ids: a retried call attaches to the running call or gets its result.
        self.calls = CallLedger(self.instance_id, config.limits.completed_call_ttl_ms)
        if shared is not None:
            # Redis lost its data (no AOF), or is back from an outage: re-publish, publish.
            shared.on_reset = self.threads.republish
            shared.monitor.listen(self.threads.store_changed)
            from shellgate.router.runtime.store.redis_bus import RedisBus
            from shellgate.router.service.shared_rules import SharedAmendments

            self.bus = RedisBus(shared.link, prefix=shared.prefix, instance_id=self.instance_id)
            self.threads.attach_bus(self.bus)
            if self.policy_store is not None:
                SharedAmendments(
                    shared.link, prefix=shared.prefix, bus=self.bus, store=self.policy_store,
                    seal=shared.seal,
                )  # fmt: skip
        limits = config.limits
        self.execute_admission = Admission(
            "Execute",
            limits.max_concurrent_executes,
            limits.admission_wait_ms,
            limit_key="limits.max_concurrent_executes",
            per_subject=limits.max_concurrent_executes_per_subject,
            per_subject_key="limits.max_concurrent_executes_per_subject",
        )
        self.project_admission = Admission(
            "Project",
            limits.max_concurrent_projects,
            limits.admission_wait_ms,
            limit_key="limits.max_concurrent_projects",
        )
        # CPU-heavy work (projecting large items, rules reloads) runs here, off the event
        # loop, at most `projection_workers` at a time; tree-sitter holds the GIL while it
        # parses, so more workers would not run faster, only delay the loop more.
        self.cpu = ThreadPoolExecutor(
            max_workers=limits.projection_workers, thread_name_prefix="shellgate-cpu"
        )
        self.turns = TurnBook(config, self.environments, self.host_shell)
        # What projections reuse (environments, wire sub-messages): one per router, shared
        # by every host context it hands out and by the wire projection.
        self.memo = ProjectionMemo()
        # The tails of calls already answered (ExecuteOnce's bookkeeping after its reply):
        # owned here, so the router's stop waits for them (aclose).
        self.call_tails = TaskSet(log)
        self._host: tuple[object, asyncio.AbstractEventLoop, HostContext] | None = None
        self._observe()
        # Operator-routed approvals (docs/approvals.md); `operator_desk` is what operator
        # fronts (ApprovalService, the console) use: it works across replicas.
        self.operator = build_operator_route(
            config, instance_id=self.instance_id, auth=self.auth, metrics=self.metrics,
            audit=self.audit_sink, redactor=self.redactor,
            redis=(
                (shared.link, shared.prefix, self.bus, shared.seal)
                if shared and self.bus else None
            ),
        )  # fmt: skip
        self.operator_desk: OperatorDesk = self.operator.desk

    def _observe(self) -> None:
        """Feed the metrics: decisions (with the audit log), reloads, state gauges."""
        sinks: list[AuditSink] = [self.metrics]
        metrics = self.metrics
        if self.audit is not None:
            sinks.append(self.audit)
            for name, help_text, read in self.audit.gauges():
                metrics.gauge(name, help_text, read)
        self.audit_sink = AuditTee(*sinks)
        if self.egress is not None:
            self.egress.observe(self.audit_sink.record)
        if self.policy_store is not None:
            self.policy_store.on_reload = lambda result: _reloaded(metrics, result)
        threads = self.threads
        metrics.gauge("shellgate_threads", "Threads held by this router.", lambda: len(threads))
        metrics.gauge(
            "shellgate_sessions", "Unified exec sessions (running processes) held.",
            lambda: threads.session_tally.count,
        )  # fmt: skip
        metrics.labelled_gauge(
            "shellgate_pending_approvals", "Calls parked for an approval decision, by route.",
            "route", self._pending_by_route,
        )  # fmt: skip
        for name, help_text in ENVIRONMENT_GAUGES.items():
            metrics.gauge(name, help_text, functools.partial(self._environment_gauge, name))

    def _pending_by_route(self) -> dict[str, float]:
        waiting = self.operator.approvals.waiting
        return {"caller": self.threads.pending_tally.count - waiting, "operator": waiting}

    # --- callers -------------------------------------------------------------------------
    def caller(
        self, metadata: Mapping[str, str], identity: Mapping[str, Sequence[bytes]]
    ) -> Caller:
        """Authenticate a request (UNAUTHENTICATED on failure)."""
        subject = self.auth.authenticate(metadata, identity)
        # Only an unauthenticated router (no tokens, no mTLS) has the unrestricted local
        # caller; an authenticated subject that happens to be named `local` is a subject
        # like any other and keeps its allow-list.
        envs = None if self.auth.open else self._client_envs.get(subject)
        return Caller(subject, envs)

    def check_environment(self, caller: Caller, environment_id: str) -> None:
        """PERMISSION_DENIED when the caller may not use the environment."""
        if caller.environments is not None and environment_id not in caller.environments:
            raise EnvironmentNotAllowedError(f"environment {environment_id!r} is not allowed for this client")

    # --- environments and turns ----------------------------------------------------------
    def environment_gauges(self) -> dict[str, float]:
        """Remote environments unreachable now and with an open circuit (metrics gauges)."""
        remotes = self.environments.remotes()
        return {
            "shellgate_environments_unreachable": sum(not e.reachable for e in remotes),
            "shellgate_environments_circuit_open": sum(e.breaker.open for e in remotes),
            "shellgate_environment_calls_failed_fast": sum(
                e.breaker.refused_total for e in remotes
            ),
        }

    def _environment_gauge(self, name: str) -> float:
        return self.environment_gauges()[name]

    def unreachable(self, environment_id: str) -> str | None:
        """The last error of a remote environment that is currently unreachable."""
        env = self.environments.get(environment_id)
        if isinstance(env, RemoteEnvironment) and not env.reachable:
            return env.last_error or "not connected"
        return None

    async def turn(
        self, thread_id: str, turn: common_pb2.TurnContext, caller: Caller
    ) -> RouterTurn:
        """The domain turn of a request (defaults applied, environments checked)."""
        return await self.turns.turn(thread_id, turn, caller.environments)

    def host(self) -> HostContext:
        """Host facts for the pure pipeline (current policy, parent env, filesystems)."""
        policy = self.policy_store.policy if self.policy_store is not None else _NO_RULES
        # Captured here, on the event loop: the pipeline runs in a worker thread, where a
        # remote filesystem cannot look the loop up for its blocking RPC bridge.
        loop = asyncio.get_running_loop()
        # The same rules object and loop give the same context: build it once per reload.
        if self._host is not None and self._host[0] is policy and self._host[1] is loop:
            return self._host[2]

        def filesystem(environment_id: str) -> PatchFileSystem:
            env = self.environments.get(environment_id)
            if isinstance(env, RemoteEnvironment):
                return RemoteFileSystem(env, loop)
            return env.filesystem()

        host = HostContext(
            policy=policy, parent_env=self.parent_env, filesystem=filesystem, memo=self.memo,
            strict_unlowerable=self.config.policy.strict_unlowerable,
        )  # fmt: skip
        self._host = (policy, loop, host)
        return host

    def host_now(self) -> HostContext | None:
        """The host context `host` would answer, from any thread; None before it is built
        (or rebuilt after a rules reload) on the loop."""
        policy = self.policy_store.policy if self.policy_store is not None else _NO_RULES
        kept = self._host
        return kept[2] if kept is not None and kept[0] is policy else None

    async def start(self) -> None:
        """Start what runs in the background (the replica bus, in scaled mode)."""
        if self.bus is not None:
            await self.bus.start()

    async def run_cpu(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on the bounded CPU pool (never on the event loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.cpu, functools.partial(fn, *args))

    async def reload_rules(self) -> ReloadResult | None:
        """Re-read the rules files on the CPU pool (a MiB rules file parses for seconds);
        the last good policy stays live until the new one is complete."""
        store = self.policy_store
        if store is None:
            return None
        return await self.run_cpu(store.reload)

    async def aclose(self) -> None:
        """Kill every process, end every thread, close every connection."""
        if self.bus is not None:
            await self.bus.aclose()
        await self.operator.aclose()
        await self.threads.aclose()
        await self.environments.aclose()
        # After the kills above, what is left of an answered call's bookkeeping ends soon;
        # bounded anyway (a stop must end), then cancelled.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.call_tails.join(), CALL_TAILS_GRACE_S)
        await self.call_tails.aclose()
        self.cpu.shutdown(wait=False, cancel_futures=True)
        if self.audit is not None:
            # Last: the outcomes of the processes killed above are still recorded.
            await asyncio.to_thread(self.audit.close)
