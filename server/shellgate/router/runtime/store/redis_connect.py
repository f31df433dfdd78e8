"""The Redis client for a `redis_url`: a single server, Sentinel, or Cluster (redis-py).

    redis://[user:pass@]host:port/db        one server (rediss:// for TLS, unix:// sockets)
    redis+sentinel://[user:pass@]h1:p1,h2:p2/<service>[/db]
                                            the master Sentinel names <service>; the
                                            credentials are the master's (sentinels are
                                            asked without them); rediss+sentinel for TLS
    redis+cluster://[user:pass@]h1:p1,h2:p2 a Redis Cluster from any of its nodes;
                                            rediss+cluster for TLS

Every client reconnects with exponential backoff (redis-py `Retry`), pings idle pooled
connections before reuse (`health_check_interval`) and bounds every socket operation.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff

__all__ = ["CLUSTER_SCHEMES", "SENTINEL_SCHEMES", "connect"]

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
_PLAIN_SCHEMES = ("redis", "rediss", "unix")
# Retries of one command on a connection error: a restarted server is found again quickly,
# a dead one does not hold a call for long (the store monitor fails fast while it is down).
RETRIES = 2
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 0.5
# Idle pooled connections are PINGed before reuse after this long (a server restart is
# noticed on a healthy connection, not by the command that needed it).
HEALTH_CHECK_INTERVAL_S = 5


def _split(url: str) -> tuple[str, str, str, str]:
    """scheme, credentials ("" or "user:pass"), hosts part and path of a multi-host URL."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"redis_url {url!r}: expected scheme://…")
    netloc, _, path = rest.partition("/")
    creds, at, hosts = netloc.rpartition("@")
    return scheme.lower(), creds if at else "", hosts, path


def _nodes(hosts: str, default_port: int, url: str) -> list[tuple[str, int]]:
    nodes = []
    for item in filter(None, hosts.split(",")):
        if item.startswith("["):  # [v6]:port
            host, _, port = item[1:].partition("]")
            port = port.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        else:
            host, port = item, ""
        if not host:
            raise ValueError(f"redis_url {url!r}: empty host")
        nodes.append((host, int(port) if port else default_port))
    if not nodes:
        raise ValueError(f"redis_url {url!r}: no hosts")
    return nodes


def _credentials(creds: str) -> dict[str, Any]:
    if not creds:
        return {}
    user, colon, password = creds.partition(":")
    if not colon:
        return {"password": unquote(user)}
    out: dict[str, Any] = {"password": unquote(password)}
    if user:
        out["username"] = unquote(user)
    return out


def _common(timeout_ms: int, *, tcp: bool = True) -> dict[str, Any]:
    # TCP keepalive is a TCP socket option: redis-py's unix-socket connection refuses it.
    keepalive: dict[str, Any] = {"socket_keepalive": True} if tcp else {}
    return {
        **keepalive,
        "socket_timeout": timeout_ms / 1000,
        "socket_connect_timeout": timeout_ms / 1000,
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "retry": Retry(ExponentialBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S), RETRIES),
    }


def connect(
    url: str, *, timeout_ms: int = 2_000
) -> tuple[Redis | RedisCluster, list[Redis], Redis]:
    """A lazily connecting client for `url`, the extra clients it uses (close them too) and
    the client for the replica bus's pub/sub; ValueError when the URL cannot be understood.

    In a Cluster the bus talks to the first listed node: PUBLISH reaches subscribers of every
    node, but counts only those of the node it ran on, and the bus waits for that count —
    so every replica must publish and subscribe on the same node.
    """
    scheme, creds, hosts, path = _split(url)
    common = _common(timeout_ms, tcp=scheme != "unix")
    if scheme in _PLAIN_SCHEMES:
        plain = Redis.from_url(url, **common)
        return plain, [], plain
    tls = scheme.startswith("rediss")
    auth = _credentials(creds)
    if scheme in CLUSTER_SCHEMES:
        found = _nodes(hosts, 6379, url)
        nodes = [ClusterNode(h, p) for h, p in found]
        bus = Redis(host=found[0][0], port=found[0][1], ssl=tls, **auth, **common)
        return RedisCluster(startup_nodes=nodes, ssl=tls, **auth, **common), [bus], bus
    if scheme in SENTINEL_SCHEMES:
        service, _, db = path.partition("/")
        if not service:
            raise ValueError(f"redis_url {url!r}: name the Sentinel service: …/<service>[/db]")
        sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
            _nodes(hosts, 26379, url),
            sentinel_kwargs={"socket_timeout": timeout_ms / 1000,
                             "socket_connect_timeout": timeout_ms / 1000},
            **common,
        )  # fmt: skip
        extra: dict[str, Any] = {"ssl": True} if tls else {}
        master: Redis = sentinel.master_for(
            unquote(service), redis_class=Redis, db=int(db or 0), **auth, **extra
        )
        return master, list(sentinel.sentinels), master
    raise ValueError(
        f"redis_url {url!r}: unknown scheme {scheme!r} (redis, rediss, unix, "
        "redis+sentinel, rediss+sentinel, redis+cluster, rediss+cluster)"
    )
