"""The Celery broker and beat's scheduler on the project's Redis: kombu's and redbeat's options for the endpoint
:mod:`engine.redis_client` reads from the settings (plain, password, TLS or Sentinel).

The broker is kombu's Redis transport with the guard of :mod:`workers.compat` (a Redis restart must not end a
worker): ``sentinel://`` URLs go to its Sentinel variant with the ``master_name`` transport option. Beat's
celery-redbeat reads ``redis-sentinel://`` with ``sentinels`` and ``service_name``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from celery import Celery

from engine.redis_client import Endpoint, parse, sentinel_kwargs, tls_options, uses_tls
from poolboy.settings import Settings
from workers.compat import SENTINEL_TRANSPORT, TRANSPORT


def _with_password(url: str, endpoint: Endpoint) -> str:
    """The URL with the password set from ``POOLBOY_REDIS_PASSWORD`` when the URL has none (kombu reads it there)."""
    if not endpoint.password:
        return url
    out = []
    for part in (p for p in url.split(";") if p):
        split = urlsplit(part)
        if split.password:
            out.append(part)
            continue
        user = quote(endpoint.username or "", safe="")
        host = split.netloc.rsplit("@", 1)[-1]
        out.append(urlunsplit(split._replace(netloc=f"{user}:{quote(endpoint.password, safe='')}@{host}")))
    return ";".join(out)


def celery_options(settings: Settings) -> dict[str, Any]:
    """Celery's broker settings: ``broker_url``, ``broker_transport`` (:mod:`workers.compat`), the
    Sentinel/socket transport options, ``broker_use_ssl``."""
    endpoint = parse(settings)
    # queue_order_strategy: a worker takes its queues strictly in the order it was given them
    # (workers.names.CONSUME_ORDER), not round-robin
    transport: dict[str, Any] = {"socket_timeout": 10, "socket_connect_timeout": 5, "health_check_interval": 25,
                                 "queue_order_strategy": "priority"}
    tls = uses_tls(settings, endpoint)
    if endpoint.is_sentinel:
        transport["master_name"] = settings.redis_sentinel_master
        transport["sentinel_kwargs"] = sentinel_kwargs(settings, tls)
    # kombu's Redis transports with the guard of workers.compat (a Redis restart must not end a worker)
    options: dict[str, Any] = {"broker_url": _with_password(endpoint.url, endpoint),
                               "broker_transport": SENTINEL_TRANSPORT if endpoint.is_sentinel else TRANSPORT,
                               "broker_transport_options": transport}
    if tls:
        options["broker_use_ssl"] = tls_options(settings)
    return options


def redbeat_options(settings: Settings) -> dict[str, Any]:
    """celery-redbeat's settings for the same Redis: its schedule and its lock live beside the work queue."""
    endpoint = parse(settings)
    tls = uses_tls(settings, endpoint)
    options: dict[str, Any] = {}
    redis_options: dict[str, Any] = {"socket_timeout": 5, "socket_connect_timeout": 5, "health_check_interval": 25}
    if endpoint.is_sentinel:
        options["redbeat_redis_url"] = f"redis-sentinel://sentinels/{endpoint.db}"
        redis_options.update(sentinels=list(endpoint.sentinels), service_name=settings.redis_sentinel_master,
                             db=endpoint.db, sentinel_kwargs=sentinel_kwargs(settings, tls))
        if endpoint.password:
            redis_options["password"] = endpoint.password
        if endpoint.username:
            redis_options["username"] = endpoint.username
    else:
        options["redbeat_redis_url"] = _with_password(endpoint.url, endpoint)
    options["redbeat_redis_options"] = redis_options
    if tls:
        options["redbeat_redis_use_ssl"] = tls_options(settings)
    return options


def probe_app(settings: Settings) -> Celery:
    """A bare Celery app on the configured broker, for remote-control pings (readiness checks)."""
    app = Celery(set_as_current=False)
    app.conf.update(celery_options(settings))
    return app
