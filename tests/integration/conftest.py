"""Fixtures shared by the engine tests (``test_engine*``): a flushed Redis client and a publisher; a flushed client
answering bytes; and by the unbound-handle index's tests: the shared cache as a live watcher that has listed claims
and handles leaves it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from celery import Celery

from cache.handle_index import RedisHandleIndex
from cache.store import ObjectCache, scope
from engine.enqueue import Enqueuer
from poolboy.settings import Settings
from tests.integration.engine_settings import LEASE
from workers.messages import enqueuer as celery_enqueuer
from workqueue import keyspace


@pytest.fixture()
def r(redis_server) -> Iterator[redis.Redis]:
    """A client on the session redis-server, emptied first so no earlier test's work queue or Celery queues leak in."""
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture()
def enqueuer(redis_server) -> Iterator[Enqueuer]:
    """The publishing side, as the watcher would use it, with the same lease as the workers."""
    app = Celery("test-publisher", broker=redis_server.url, set_as_current=False)
    settings = Settings.from_env(redis_url=redis_server.url, workqueue_lease_seconds=LEASE)
    yield celery_enqueuer(app, settings)
    app.close()


INDEX_API = "poolboy.gpte.redhat.com/v1"
INDEX_DOMAIN = "poolboy.gpte.redhat.com"


@pytest.fixture()
def bytes_client(redis_server) -> Iterator[redis.Redis]:
    """A client on the emptied session redis-server that answers bytes, as the workers' clients do."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture()
def rb(bytes_client: redis.Redis) -> redis.Redis:
    """A bytes client on the emptied session redis-server, marked as a live watcher's cache that has listed every
    claim and handle (the index answers only then)."""
    bytes_client.set(keyspace.CACHE_ALIVE, "1")
    bytes_client.sadd(keyspace.CACHE_SYNCED, scope(INDEX_API, "ResourceClaim", "*"),
                      scope(INDEX_API, "ResourceHandle", "*"))
    return bytes_client


@pytest.fixture()
def cache(rb: redis.Redis) -> ObjectCache:
    """The shared cache's writer, as the watcher puts what it sees."""
    return ObjectCache(rb, INDEX_DOMAIN)


@pytest.fixture()
def index(rb: redis.Redis) -> RedisHandleIndex:
    """The unbound-handle index of the operator namespace ``op``, as the workers read it."""
    return RedisHandleIndex(rb, INDEX_API, "op")
