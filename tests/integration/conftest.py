"""Fixtures shared by the engine tests (``test_engine*``): a flushed Redis client and a publisher."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from celery import Celery

from poolboy.settings import Settings
from tests.integration.engine_settings import LEASE
from workers.enqueue import Enqueuer


@pytest.fixture()
def r(redis_server) -> Iterator[redis.Redis]:
    """A client on the session redis-server, emptied first so no earlier test's gate or queues leak in."""
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture()
def enqueuer(redis_server) -> Iterator[Enqueuer]:
    """The publishing side, as the watcher would use it, with the same gate lease as the workers."""
    app = Celery("test-publisher", broker=redis_server.url, set_as_current=False)
    settings = Settings.from_env(redis_url=redis_server.url, gate_lease_seconds=LEASE)
    yield Enqueuer(settings, app)
    app.close()
