"""Opening the shared store of a scaled router (`redis_url`): the client, its seal, errors.

Kept apart from `app` so the optional `redis` extra is imported only when configured, and
a missing extra or a bad URL is the one `config error:` line, never a traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shellgate.router.runtime.audit import AuditSink
from shellgate.router.runtime.store.record_seal import RecordSeal, load_seal_key
from shellgate.router.service.config import ConfigError, RouterConfig

if TYPE_CHECKING:
    from shellgate.router.runtime.store.redis_state import RedisSharedState

__all__ = ["open_shared_store"]

log = logging.getLogger(__name__)


def _audited_seal(config: RouterConfig, audit: AuditSink | None) -> RecordSeal:
    """The seal of what grants in the store; a refused record is logged and audited (who
    could write Redis tried to grant something)."""
    seal = RecordSeal(load_seal_key(config.shared_state_key_file))

    def refused(what: str, where: dict[str, str]) -> None:
        log.warning(
            "refused a forged %s from the shared store (its seal does not verify): %s",
            what, where,
        )  # fmt: skip
        if audit is not None:
            audit.record({"type": "shared_state_refused", "record": what, **where})

    seal.on_forged = refused
    return seal


def open_shared_store(config: RouterConfig, audit: AuditSink | None) -> RedisSharedState | None:
    """The Redis store of `config` (connecting lazily), or None without a shared store."""
    url = config.shared_store_url()
    if not url:
        return None
    try:
        from shellgate.router.runtime.store.redis_state import RedisSharedState
    except ImportError as exc:
        key = "redis_url_file" if config.redis_url_file else "redis_url"
        raise ConfigError(
            key, f"a shared store needs its extra ({exc.name} is missing): "
            "pip install 'shellgate[redis]'",
        ) from exc  # fmt: skip
    seal = _audited_seal(config, audit)
    try:
        return RedisSharedState.from_url(
            url, idle_ttl_ms=config.limits.thread_idle_ttl_ms, seal=seal,
            prefix=config.redis_key_prefix,
        )  # fmt: skip
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
