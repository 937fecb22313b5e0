"""The one place that reads the Redis settings: plain, password, TLS or Sentinel.

Every Redis user of the project goes through here, so a deployment switches to TLS or to Sentinel high availability
by settings alone: the work queue, the delaying queue, the own-writes records and the metrics read :func:`client`;
the Celery broker and the beat scheduler read :func:`parse`, :func:`tls_options` and :func:`sentinel_kwargs`
through :mod:`workers.broker`, which turns them into kombu's and redbeat's options.

``POOLBOY_REDIS_URL`` is one of:

* ``redis://[:password@]host:port/db``, or ``rediss://...`` for TLS;
* ``sentinel://host:port;sentinel://host:port;...`` (optionally ``/db`` on the first one): the master's address is
  asked from the sentinels (``POOLBOY_REDIS_SENTINEL_MASTER``) and asked again after a failover.

A password in the URL or in ``POOLBOY_REDIS_PASSWORD`` authenticates to the Redis servers,
``POOLBOY_REDIS_SENTINEL_PASSWORD`` to the sentinels themselves. TLS is on for ``rediss://`` and, with a Sentinel URL,
when ``POOLBOY_REDIS_TLS`` is set (then for the sentinels too); ``POOLBOY_REDIS_TLS_CA_FILE``, ``_CERT_FILE`` and
``_KEY_FILE`` name the CA bundle and the client certificate.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.sentinel import Sentinel

from poolboy.settings import Settings

SENTINEL_SCHEME = "sentinel"
DEFAULT_SENTINEL_PORT = 26379
#: socket options of every long-lived client: never hang on a dead peer; notice a half-open connection
SOCKET_OPTIONS: dict[str, Any] = {"socket_timeout": 10, "socket_connect_timeout": 5, "health_check_interval": 25}


@dataclass(frozen=True)
class Endpoint:
    """The parsed ``POOLBOY_REDIS_URL``: a plain URL, or the sentinels of a master (with the database number)."""

    url: str
    sentinels: tuple[tuple[str, int], ...] = ()
    db: int = 0
    username: str | None = None
    password: str | None = None

    @property
    def is_sentinel(self) -> bool:
        return bool(self.sentinels)


def parse(settings: Settings) -> Endpoint:
    """Split ``settings.redis_url``; raises ValueError with the offending part for anything malformed."""
    url = settings.redis_url.strip()
    parts = [p for p in url.split(";") if p]
    if not parts:
        raise ValueError("POOLBOY_REDIS_URL is empty")
    first = urlsplit(parts[0])
    username = unquote(first.username) if first.username else None
    password = unquote(first.password) if first.password else (settings.redis_password or None)
    if first.scheme != SENTINEL_SCHEME:
        if len(parts) > 1:
            raise ValueError(f"several ';'-separated URLs are only for sentinel://, not {first.scheme}://")
        if first.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"unsupported Redis URL scheme {first.scheme!r} (redis, rediss, unix or sentinel)")
        return Endpoint(url, (), _db(first.path), username, password)
    sentinels = []
    for part in parts:
        split = urlsplit(part)
        if split.scheme != SENTINEL_SCHEME or not split.hostname:
            raise ValueError(f"every part of a Sentinel URL must be sentinel://host:port, got {part!r}")
        sentinels.append((split.hostname, split.port or DEFAULT_SENTINEL_PORT))
    if not settings.redis_sentinel_master:
        raise ValueError("a sentinel:// URL needs POOLBOY_REDIS_SENTINEL_MASTER (the monitored master's name)")
    return Endpoint(url, tuple(sentinels), _db(first.path), username, password)


def _db(path: str) -> int:
    text = path.strip("/")
    if not text:
        return 0
    if not text.isdigit():
        raise ValueError(f"the Redis database must be a number, got {text!r}")
    return int(text)


def uses_tls(settings: Settings, endpoint: Endpoint | None = None) -> bool:
    endpoint = endpoint or parse(settings)
    return endpoint.url.startswith("rediss://") or (endpoint.is_sentinel and settings.redis_tls)


def tls_options(settings: Settings) -> dict[str, Any]:
    """redis-py's (and kombu's ``broker_use_ssl``) TLS keywords: verify the server against the CA, if one is set."""
    options: dict[str, Any] = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if settings.redis_tls_ca_file:
        options["ssl_ca_certs"] = settings.redis_tls_ca_file
    if settings.redis_tls_cert_file:
        options["ssl_certfile"] = settings.redis_tls_cert_file
    if settings.redis_tls_key_file:
        options["ssl_keyfile"] = settings.redis_tls_key_file
    return options


def sentinel_kwargs(settings: Settings, tls: bool) -> dict[str, Any]:
    """Options of the connections to the sentinels themselves (their own password; TLS like the servers)."""
    options: dict[str, Any] = {"socket_timeout": 2, "socket_connect_timeout": 2}
    if settings.redis_sentinel_password:
        options["password"] = settings.redis_sentinel_password
    if tls:
        options.update(ssl=True, **tls_options(settings))
    return options


def client(settings: Settings, **overrides: Any) -> redis.Redis:
    """A redis-py client of the current master. With Sentinel it follows failovers: a connection error makes the
    pool ask the sentinels for the master again."""
    endpoint = parse(settings)
    tls = uses_tls(settings, endpoint)
    options = {**SOCKET_OPTIONS, **overrides}
    if endpoint.password:
        options.setdefault("password", endpoint.password)
    if endpoint.username:
        options.setdefault("username", endpoint.username)
    if tls:
        options = {**tls_options(settings), **options}
    if not endpoint.is_sentinel:
        return redis.Redis.from_url(endpoint.url, **options)
    if tls:
        options["ssl"] = True
    sentinel = Sentinel(list(endpoint.sentinels), sentinel_kwargs=sentinel_kwargs(settings, tls))
    return sentinel.master_for(settings.redis_sentinel_master, db=endpoint.db, **options)
